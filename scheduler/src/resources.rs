//! Resource quantities and a pod's requests as the scheduler counts them (upstream's
//! resource.Quantity and resourcehelper.PodRequests): the larger of the sum of the containers'
//! requests and the largest init container's request, plus the pod overhead.

use registry::types::ContainerRestartPolicy;
use serde_json::Value;

/// CPU in millicores, memory and ephemeral storage in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
}

impl Resources {
    /// From a v1 ResourceList (`requests`, `overhead`, `allocatable`).
    pub fn from_list(list: &Value) -> Self {
        let get = |name: &str, scale: f64| {
            list[name]
                .as_str()
                .and_then(registry::types::parse_quantity)
                .map(|q| (q * scale).ceil() as i64)
                .unwrap_or(0)
        };
        Self {
            milli_cpu: get("cpu", 1000.0),
            memory: get("memory", 1.0),
            ephemeral_storage: get("ephemeral-storage", 1.0),
        }
    }

    pub fn add(&mut self, other: &Self) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.ephemeral_storage += other.ephemeral_storage;
    }

    pub fn sub(&mut self, other: &Self) {
        self.milli_cpu -= other.milli_cpu;
        self.memory -= other.memory;
        self.ephemeral_storage -= other.ephemeral_storage;
    }

    fn max(&mut self, other: &Self) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
    }
}

/// The requests of a pod: containers summed, init containers' maximum, overhead added.
/// Restartable init containers (sidecars) run beside the containers, so they add up.
pub fn pod_requests(pod: &Value) -> Resources {
    let spec = &pod["spec"];
    let requests = |c: &Value| Resources::from_list(&c["resources"]["requests"]);
    let mut sum = Resources::default();
    for c in spec["containers"].as_array().into_iter().flatten() {
        sum.add(&requests(c));
    }
    let mut init_max = Resources::default();
    let mut sidecars = Resources::default();
    for c in spec["initContainers"].as_array().into_iter().flatten() {
        if ContainerRestartPolicy::restartable(c) {
            sidecars.add(&requests(c));
            init_max.max(&sidecars);
        } else {
            let mut during = requests(c);
            during.add(&sidecars);
            init_max.max(&during);
        }
    }
    sum.add(&sidecars);
    sum.max(&init_max);
    sum.add(&Resources::from_list(&spec["overhead"]));
    sum
}

/// The requests LeastAllocated scores with: a container asking for no cpu or memory counts
/// upstream's defaults (100m, 200Mi), so empty pods still spread.
pub fn non_zero_requests(pod: &Value) -> Resources {
    const DEFAULT_MILLI_CPU: i64 = 100;
    const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024;
    let mut sum = Resources::default();
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        let r = Resources::from_list(&c["resources"]["requests"]);
        sum.milli_cpu += if r.milli_cpu == 0 {
            DEFAULT_MILLI_CPU
        } else {
            r.milli_cpu
        };
        sum.memory += if r.memory == 0 {
            DEFAULT_MEMORY
        } else {
            r.memory
        };
    }
    sum
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn init_containers_take_the_max_and_overhead_adds() {
        let pod = json!({"spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "100m", "memory": "1Mi"}}},
                {"resources": {"requests": {"cpu": "200m"}}},
            ],
            "initContainers": [{"resources": {"requests": {"cpu": "500m", "memory": "512Ki"}}}],
            "overhead": {"cpu": "10m"},
        }});
        let r = pod_requests(&pod);
        assert_eq!(r.milli_cpu, 510);
        assert_eq!(r.memory, 1024 * 1024);
        let nz = non_zero_requests(&json!({"spec": {"containers": [{}]}}));
        assert_eq!((nz.milli_cpu, nz.memory), (100, 200 * 1024 * 1024));
    }
}
