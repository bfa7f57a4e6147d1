//! At most ten update entries per object (upstream's capManagersManager): past that, the
//! oldest updates of one API version are merged into one `ancient-changes` entry, so an object
//! written by many one-off managers does not grow without bound.

use std::collections::BTreeMap;

use structured_merge::VersionedSet;

use super::entries::{Managed, ManagerInfo, UPDATE};

const MAX_UPDATE_MANAGERS: usize = 10;
const OLD_UPDATES_MANAGER: &str = "ancient-changes";

pub fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<String> = managed
        .fields
        .iter()
        .filter(|(_, vs)| !vs.applied)
        .map(|(id, _)| id.clone())
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    let seconds = |id: &String| {
        managed
            .times
            .get(id)
            .and_then(|t| crate::object::parse_time(t))
            .map(|t| t.timestamp())
            .unwrap_or(0)
    };
    updaters.sort_by(|a, b| seconds(a).cmp(&seconds(b)).then_with(|| a.cmp(b)));
    let mut first_of_version: BTreeMap<String, String> = BTreeMap::new();
    let mut length = updaters.len();
    for manager in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(vs) = managed.fields.get(&manager).cloned() else {
            continue;
        };
        let time = managed.times.get(&manager).cloned();
        let bucket = ManagerInfo {
            manager: OLD_UPDATES_MANAGER.into(),
            operation: UPDATE.into(),
            api_version: vs.api_version.clone(),
            subresource: String::new(),
        }
        .identifier();
        let Some(first) = first_of_version.get(&vs.api_version) else {
            first_of_version.insert(vs.api_version.clone(), manager);
            continue;
        };
        if !managed.fields.contains_key(&bucket) {
            if let Some(s) = managed.fields.remove(first) {
                managed.fields.insert(bucket.clone(), s);
            }
        }
        let merged = managed
            .fields
            .get(&bucket)
            .map(|b| b.set.union(&vs.set))
            .unwrap_or_else(|| vs.set.clone());
        managed.fields.insert(
            bucket.clone(),
            VersionedSet {
                set: merged,
                api_version: vs.api_version.clone(),
                applied: false,
            },
        );
        managed.fields.remove(&manager);
        length -= 1;
        match time {
            Some(t) => managed.times.insert(bucket, t),
            None => managed.times.remove(&bucket),
        };
    }
}
