//! The CronJob controller over a real registry (embedded store and etcd) with a clock the test
//! moves a minute at a time; the test stands in for the Job controller by finishing Jobs
//! through their status.

mod support;

use std::sync::Arc;

use chrono::{DurationRound, TimeDelta, Utc};
use client::clock::ManualClock;
use controllers::cronjob::{
    CronJobController, CronJobControllerConfig, SCHEDULED_TIMESTAMP_ANNOTATION,
};
use registry::options::WriteOptions;
use registry::patch::PatchType;
use registry::Subresource;
use serde_json::{json, Value};
use support::batch::{
    create, event_reasons, finish_job, get, informers, list, template_spec, wait_for,
};
use support::Harness;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

struct Running {
    clock: Arc<ManualClock>,
    stop: CancellationToken,
    ticks: u32,
}

impl Running {
    fn start(h: &Harness) -> Self {
        // A little into the current minute, so the first tick is the next minute's start.
        let now = Utc::now();
        let clock = ManualClock::new(
            now.duration_trunc(TimeDelta::minutes(1)).unwrap_or(now) + TimeDelta::seconds(30),
        );
        let config = CronJobControllerConfig {
            workers: 2,
            clock: clock.clone(),
        };
        let controller = CronJobController::new(&informers(h), config).expect("controller");
        let stop = CancellationToken::new();
        tokio::spawn(controller.run(stop.clone()));
        Self {
            clock,
            stop,
            ticks: 0,
        }
    }

    /// Moves the clock a minute on and has the CronJob looked at (a label change queues it).
    async fn tick(&mut self, h: &Harness, name: &str) {
        self.clock.advance(TimeDelta::minutes(1));
        self.ticks += 1;
        let patch = json!({"metadata": {"labels": {"tick": self.ticks.to_string()}}});
        h.store("batch", "cronjobs")
            .patch(
                Some(NS),
                name,
                PatchType::Merge,
                patch.to_string().as_bytes(),
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await
            .expect("touch cronjob");
    }

    /// The name the Job of the current minute gets.
    fn job_name(&self, cronjob: &str) -> String {
        format!("{cronjob}-{}", self.clock_minutes())
    }

    fn clock_minutes(&self) -> i64 {
        use client::clock::Clock;
        self.clock.now().timestamp() / 60
    }
}

fn cronjob(name: &str, extra: Value) -> Value {
    let mut spec = json!({
        "schedule": "*/1 * * * *",
        "jobTemplate": {
            "metadata": {"labels": {"made-by": name}},
            "spec": template_spec(name, json!({})),
        },
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name}, "spec": spec})
}

async fn job_names(h: &Harness) -> Vec<String> {
    let mut names: Vec<String> = list(&h.store("batch", "jobs"), NS)
        .await
        .iter()
        .filter(|j| j["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|j| j["metadata"]["name"].as_str().map(String::from))
        .collect();
    names.sort();
    names
}

async fn get_cronjob(h: &Harness, name: &str) -> Value {
    get(&h.store("batch", "cronjobs"), NS, name)
        .await
        .expect("cronjob exists")
}

/// The names `status.active` lists, sorted: its order is the order the controller happened to
/// see the Jobs in (a Job whose status write lost a race is listed after a later one).
fn active_names(cj: &Value) -> Vec<String> {
    let mut names: Vec<String> = cj["status"]["active"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str().map(String::from))
        .collect();
    names.sort();
    names
}

async fn creates_a_job_per_schedule_tick(h: &Harness) {
    let mut c = Running::start(h);
    create(
        &h.store("batch", "cronjobs"),
        NS,
        cronjob("tick", json!({})),
    )
    .await;
    let mut expected = Vec::new();
    for _ in 0..2 {
        c.tick(h, "tick").await;
        expected.push(c.job_name("tick"));
        wait_for("the tick's job", || async {
            job_names(h).await == expected
        })
        .await;
    }
    let job = get(&h.store("batch", "jobs"), NS, &expected[1])
        .await
        .expect("job");
    let scheduled = chrono::DateTime::from_timestamp(c.clock_minutes() * 60, 0).expect("time");
    assert_eq!(
        job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION],
        registry::object::timestamp(scheduled)
    );
    assert_eq!(job["metadata"]["labels"]["made-by"], "tick");
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    wait_for("the status", || async {
        let cj = get_cronjob(h, "tick").await;
        active_names(&cj) == expected
            && cj["status"]["lastScheduleTime"] == registry::object::timestamp(scheduled)
    })
    .await;
    wait_for("the creation to be reported", || async {
        event_reasons(h, NS, "tick")
            .await
            .contains(&"SuccessfulCreate".into())
    })
    .await;
    c.stop.cancel();
}

async fn forbid_skips_while_a_job_runs(h: &Harness) {
    let mut c = Running::start(h);
    let cronjobs = h.store("batch", "cronjobs");
    create(
        &cronjobs,
        NS,
        cronjob("once", json!({"concurrencyPolicy": "Forbid"})),
    )
    .await;
    c.tick(h, "once").await;
    let first = c.job_name("once");
    wait_for("the first job", || async {
        job_names(h).await == [first.clone()]
    })
    .await;
    c.tick(h, "once").await;
    wait_for("the skip to be reported", || async {
        event_reasons(h, NS, "once")
            .await
            .contains(&"JobAlreadyActive".into())
    })
    .await;
    assert_eq!(job_names(h).await, std::slice::from_ref(&first));
    finish_job(&h.store("batch", "jobs"), NS, &first, "Complete").await;
    // The skipped time was never recorded as scheduled: it starts once the first is done.
    let second = c.job_name("once");
    wait_for(
        "the skipped tick's job after the first finished",
        || async {
            let cj = get_cronjob(h, "once").await;
            active_names(&cj) == [second.clone()]
                && cj["status"]["lastSuccessfulTime"].is_string()
                && job_names(h).await == [first.clone(), second.clone()]
        },
    )
    .await;
    // Events are written in the background, after the status that reports the completion.
    wait_for("the completion to be reported", || async {
        event_reasons(h, NS, "once")
            .await
            .contains(&"SawCompletedJob".into())
    })
    .await;
    c.stop.cancel();
}

async fn replace_replaces_the_running_job(h: &Harness) {
    let mut c = Running::start(h);
    let cronjobs = h.store("batch", "cronjobs");
    create(
        &cronjobs,
        NS,
        cronjob("swap", json!({"concurrencyPolicy": "Replace"})),
    )
    .await;
    c.tick(h, "swap").await;
    let first = c.job_name("swap");
    wait_for("the first job", || async {
        job_names(h).await == [first.clone()]
    })
    .await;
    c.tick(h, "swap").await;
    let second = c.job_name("swap");
    wait_for("the replacement", || async {
        job_names(h).await == [second.clone()]
            && active_names(&get_cronjob(h, "swap").await) == [second.clone()]
    })
    .await;
    wait_for("the deletion to be reported", || async {
        event_reasons(h, NS, "swap")
            .await
            .contains(&"SuccessfulDelete".into())
    })
    .await;
    c.stop.cancel();
}

async fn history_limits_prune_the_oldest_finished_jobs(h: &Harness) {
    let mut c = Running::start(h);
    let cronjobs = h.store("batch", "cronjobs");
    let jobs = h.store("batch", "jobs");
    let limits = json!({"successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1});
    create(&cronjobs, NS, cronjob("hist", limits)).await;
    let mut made = Vec::new();
    for outcome in ["Complete", "Failed", "Complete", "Failed"] {
        c.tick(h, "hist").await;
        let name = c.job_name("hist");
        wait_for("the tick's job", || async {
            job_names(h).await.contains(&name)
        })
        .await;
        finish_job(&jobs, NS, &name, outcome).await;
        made.push(name);
        // Start times are at second precision: keep the finished jobs' order clear.
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    }
    wait_for("the history to be pruned", || async {
        job_names(h).await == [made[2].clone(), made[3].clone()]
    })
    .await;
    c.stop.cancel();
}

/// A schedule that parses but names no real date gets upstream's warning, and no Job.
async fn an_impossible_schedule_is_reported(h: &Harness) {
    let mut c = Running::start(h);
    let mut never = cronjob("never", json!({}));
    never["spec"]["schedule"] = json!("59 23 31 2 *");
    create(&h.store("batch", "cronjobs"), NS, never).await;
    c.tick(h, "never").await;
    wait_for("the InvalidSchedule event", || async {
        event_reasons(h, NS, "never")
            .await
            .contains(&"InvalidSchedule".into())
    })
    .await;
    assert!(job_names(h).await.is_empty());
    c.stop.cancel();
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    an_impossible_schedule_is_reported,
    creates_a_job_per_schedule_tick,
    forbid_skips_while_a_job_runs,
    replace_replaces_the_running_job,
    history_limits_prune_the_oldest_finished_jobs,
);
