//! The put / update / get rows: raw etcd, our `KvStore` on the etcd backend ("ours-etcd") and on
//! the embedded backend, each doing the same ops over keys of its own.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use storage::{Interface, KeyValue, KvStore, ReadRevision, UpdateOptions};

use crate::report::Row;
use crate::tasks::{run_concurrent, RunResult, Tally, TaskStats};

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum System {
    /// etcd_client put / get.
    Raw,
    /// etcd_client txn, the same compare-and-swap the etcd backend's put_if sends (diagnostic).
    RawTxn,
    /// KvStore on the etcd backend.
    Ours,
    /// KvStore on the embedded backend.
    Embedded,
}

/// RawTxn only prices the backend's write txn, so it sits out the reads.
const WRITES: [System; 4] = [System::Raw, System::RawTxn, System::Ours, System::Embedded];
const READS: [System; 3] = [System::Raw, System::Ours, System::Embedded];

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Put,
    Update,
    Get,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Put => "put",
            Op::Update => "update",
            Op::Get => "get",
        }
    }
}

pub struct Systems {
    pub raw: etcd_client::Client,
    pub ours: KvStore,
    pub embedded: KvStore,
}

/// What the puts returned, by op index, for the updates to start from.
type Created = Arc<Vec<Option<KeyValue>>>;

/// A value of `size` bytes, distinct per `tag` so updates really change it.
pub fn value_of(size: usize, tag: u8) -> Bytes {
    let mut v = vec![b'a' + (tag % 26); size];
    if let Some(first) = v.first_mut() {
        *first = b'v';
    }
    Bytes::from(v)
}

/// Gets read the written keys in a scrambled order.
fn scrambled(i: usize, n: usize) -> usize {
    (i.wrapping_mul(7919).wrapping_add(13)) % n.max(1)
}

/// One block of rows: the same key space, concurrency and op count.
pub struct Phase<'a> {
    pub systems: &'a Systems,
    pub name: String,
    pub writers: usize,
    pub ops: usize,
    pub rounds: usize,
    pub value_size: usize,
}

impl Phase<'_> {
    /// Opens connections and makes etcd and redb do their first allocations before anything
    /// is timed.
    pub async fn warm_up(&self) {
        let value = value_of(self.value_size, 0);
        let none = HashMap::new();
        self.row(Op::Put, &value, &WRITES, &none).await;
        self.row(Op::Get, &value, &READS, &none).await;
    }

    /// The put, update and get rows, the updates starting from what the puts created.
    pub async fn rows(&self) -> Vec<Row> {
        let v1 = value_of(self.value_size, 1);
        let v2 = value_of(self.value_size, 2);
        let none = HashMap::new();

        let mut put = self.row(Op::Put, &v1, &WRITES, &none).await;
        let created: HashMap<System, Created> = put
            .iter_mut()
            .map(|(s, r)| (*s, index_created(std::mem::take(&mut r.created), self.ops)))
            .collect();
        let update = self.row(Op::Update, &v2, &WRITES, &created).await;
        let get = self.row(Op::Get, &v1, &READS, &none).await;

        [(Op::Put, put), (Op::Update, update), (Op::Get, get)]
            .into_iter()
            .map(|(op, mut results)| {
                let mut take = |s| results.remove(&s);
                Row {
                    op,
                    writers: self.writers,
                    raw: take(System::Raw).expect("raw etcd ran"),
                    raw_txn: take(System::RawTxn),
                    ours: take(System::Ours).expect("ours-etcd ran"),
                    embedded: take(System::Embedded).expect("embedded ran"),
                }
            })
            .collect()
    }

    /// Runs `op` on every system in `order`, `rounds` times over successive slices of the
    /// keys, rotating which system goes first, so background load and the stores' growth fall
    /// on all of them alike.
    async fn row(
        &self,
        op: Op,
        value: &Bytes,
        order: &[System],
        created: &HashMap<System, Created>,
    ) -> HashMap<System, RunResult> {
        let (ops, rounds) = (self.ops, self.rounds.clamp(1, self.ops.max(1)));
        let mut tallies: HashMap<System, Tally> = HashMap::new();
        for r in 0..rounds {
            let range = (ops * r / rounds)..(ops * (r + 1) / rounds);
            for k in 0..order.len() {
                let system = order[(k + r) % order.len()];
                let created = created.get(&system).cloned();
                let part = self.part(system, op, range.clone(), value, created).await;
                tallies.entry(system).or_default().add(part);
            }
        }
        tallies.into_iter().map(|(s, t)| (s, t.finish())).collect()
    }

    /// One system doing `op` over the indices in `range` with `writers` concurrent tasks.
    async fn part(
        &self,
        system: System,
        op: Op,
        range: Range<usize>,
        value: &Bytes,
        created: Option<Created>,
    ) -> Tally {
        let systems = self.systems;
        let (target, keys) = match system {
            System::Raw => (Target::Raw(systems.raw.clone()), "/registry/raw-"),
            System::RawTxn => (Target::RawTxn(systems.raw.clone()), "/registry/rawtxn-"),
            System::Ours => (Target::Store(systems.ours.clone()), "/tput-"),
            System::Embedded => (Target::Store(systems.embedded.clone()), "/tput-"),
        };
        let worker = Worker {
            target,
            op,
            keys: format!("{keys}{}", self.name),
            value: value.clone(),
            n: self.ops,
            created,
        };
        run_concurrent(self.writers, range, |indices| worker.clone().run(indices)).await
    }
}

fn index_created(created: Vec<(usize, KeyValue)>, ops: usize) -> Created {
    let mut out = vec![None; ops];
    for (i, kv) in created {
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(kv);
        }
    }
    Arc::new(out)
}

#[derive(Clone)]
enum Target {
    Raw(etcd_client::Client),
    RawTxn(etcd_client::Client),
    Store(KvStore),
}

/// One task's share of a part; each task gets its own clone.
#[derive(Clone)]
struct Worker {
    target: Target,
    op: Op,
    /// Prefix of this system's keys in this phase.
    keys: String,
    value: Bytes,
    /// Keys in the phase, for gets to read any of them.
    n: usize,
    created: Option<Created>,
}

impl Worker {
    async fn run(mut self, indices: Vec<usize>) -> TaskStats {
        let mut st = TaskStats::with_capacity(indices.len());
        for i in indices {
            self.op(i, &mut st).await;
        }
        st
    }

    async fn op(&mut self, i: usize, st: &mut TaskStats) {
        let Worker {
            target,
            op,
            keys,
            value,
            n,
            created,
        } = self;
        let key = |i: usize| format!("{keys}/k{i:08}");
        let expected = |i: usize| created.as_ref().and_then(|c| c.get(i).cloned().flatten());
        match (target, *op) {
            (Target::Raw(client), Op::Put | Op::Update) => {
                let t = Instant::now();
                let r = client.put(key(i), value.to_vec(), None).await;
                st.record(t, r);
            }
            (Target::Raw(client) | Target::RawTxn(client), Op::Get) => {
                let key = key(scrambled(i, *n));
                let t = Instant::now();
                let r = match client.get(key.as_str(), None).await {
                    Ok(resp) if resp.kvs().is_empty() => Err(format!("{key} not found")),
                    Ok(_) => Ok(()),
                    Err(e) => Err(e.to_string()),
                };
                st.record(t, r);
            }
            (Target::RawTxn(client), Op::Put | Op::Update) => {
                let key = key(i);
                let exp = expected(i).map_or(0, |kv| kv.mod_revision);
                let opts = Some(PutOptions::new().with_prev_key());
                let txn = Txn::new()
                    .when([Compare::mod_revision(key.as_str(), CompareOp::Equal, exp)])
                    .and_then([TxnOp::put(key.as_str(), value.to_vec(), opts)])
                    .or_else([TxnOp::get(key.as_str(), None)]);
                let t = Instant::now();
                let r = match client.txn(txn).await {
                    Ok(resp) if resp.succeeded() => Ok(resp.header().map_or(0, |h| h.revision())),
                    Ok(_) => Err(format!("{key}: compare failed")),
                    Err(e) => Err(e.to_string()),
                };
                if let Some(revision) = st.record(t, r) {
                    let kv = KeyValue {
                        key,
                        value: Bytes::new(),
                        create_revision: revision,
                        mod_revision: revision,
                        version: 1,
                    };
                    st.created.push((i, kv));
                }
            }
            (Target::Store(store), Op::Put) => {
                let t = Instant::now();
                let r = store.create(&key(i), value.clone()).await;
                if let Some(kv) = st.record(t, r) {
                    st.created.push((i, kv));
                }
            }
            // guaranteed_update starting from the value the create returned (one
            // compare-and-swap, the path the registry takes with the watch cache's copy);
            // without it, it is a read plus a txn.
            (Target::Store(store), Op::Update) => {
                let opts = UpdateOptions {
                    cached: expected(i),
                    ..Default::default()
                };
                let mut calls = 0u64;
                let mut update = |_: Option<&KeyValue>| {
                    calls += 1;
                    Ok(value.clone().into())
                };
                let t = Instant::now();
                let r = store.guaranteed_update(&key(i), opts, &mut update).await;
                st.retries += calls.saturating_sub(1);
                st.record(t, r);
            }
            (Target::Store(store), Op::Get) => {
                let key = key(scrambled(i, *n));
                let t = Instant::now();
                let r = store.get(&key, ReadRevision::Latest).await;
                st.record(t, r);
            }
        }
    }
}
