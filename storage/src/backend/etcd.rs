//! The etcd3 backend: every primitive is one etcd request (a txn for compare-and-swap), as in
//! upstream's etcd3 store.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse,
    WatchOptions,
};
use futures::StreamExt;
use tokio::sync::Mutex;
use tonic::Code;

use super::etcd_leases::LeaseManager;
use super::etcd_members::Members;
use super::{
    Backend, BackendWatch, KeyRange, RangeRequest, RangeResponse, RawEvent, RawEventKind,
    TxnOutcome, WatchMessage,
};
use crate::{KeyValue, Result, StorageError};

/// Connection settings. Short connect timeouts make requests fail fast while etcd is down;
/// keep-alives notice a dead connection under an idle watch.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    pub endpoints: Vec<String>,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
}

impl EtcdConfig {
    pub fn new(endpoints: Vec<String>) -> Self {
        Self {
            endpoints,
            connect_timeout: Duration::from_secs(1),
            request_timeout: Duration::from_secs(15),
        }
    }
}

pub struct EtcdBackend {
    /// Every member, each request going to a healthy one.
    members: Arc<Members>,
    leases: LeaseManager,
}

impl EtcdBackend {
    /// Connects lazily: etcd need not be up yet; requests fail with Unavailable until it is,
    /// and the channel reconnects by itself after etcd restarts.
    pub async fn connect(config: EtcdConfig) -> Result<Self> {
        let options = ConnectOptions::new()
            .with_connect_timeout(config.connect_timeout)
            .with_timeout(config.request_timeout)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            .with_keep_alive_while_idle(true);
        let members = Members::connect(&config.endpoints, options, config.request_timeout)
            .await
            .map_err(map_error)?;
        Ok(Self {
            leases: LeaseManager::new(members.clone()),
            members,
        })
    }

    /// One txn: `op` if the key's mod revision is `expected`, else read the key (so a lost
    /// compare-and-swap costs no second round trip). Ok: the revision and op responses.
    async fn compare_and(
        &self,
        key: &str,
        expected: i64,
        op: TxnOp,
    ) -> Result<std::result::Result<(i64, Vec<TxnOpResponse>), TxnOutcome>> {
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, expected)])
            .and_then([op])
            .or_else([TxnOp::get(key, None)]);
        let resp = self
            .members
            .write(|mut c| {
                let txn = txn.clone();
                async move { c.kv.txn(txn).await }
            })
            .await
            .map_err(map_error)?;
        if !resp.succeeded() {
            return Ok(Err(TxnOutcome::Failed {
                current: current_from(resp.op_responses()),
            }));
        }
        Ok(Ok((header_revision(resp.header()), resp.op_responses())))
    }

    /// A client of the first member, for callers that measure against raw etcd.
    pub fn client(&self) -> Client {
        self.members.first_client()
    }

    /// Each endpoint and whether it is currently believed healthy.
    pub fn endpoint_health(&self) -> Vec<(String, bool)> {
        self.members
            .endpoints()
            .into_iter()
            .map(|(endpoint, health)| (endpoint, health.healthy()))
            .collect()
    }

    /// Each endpoint's state in words, for the health checks' failure reasons: which member a
    /// failing cluster check could not reach, and which ones a passing one did without.
    fn describe_endpoints(&self) -> String {
        let states: Vec<String> = self
            .members
            .endpoints()
            .into_iter()
            .map(|(endpoint, health)| match health.failures() {
                0 => format!("{endpoint} healthy"),
                n => format!("{endpoint} unhealthy ({n} failed requests or probes in a row)"),
            })
            .collect();
        states.join(", ")
    }
}

fn convert_kv(kv: &etcd_client::KeyValue) -> KeyValue {
    KeyValue {
        key: String::from_utf8_lossy(kv.key()).into_owned(),
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
        version: kv.version(),
    }
}

/// Maps etcd client errors onto the storage vocabulary by gRPC code and etcd's messages.
pub(crate) fn map_error(err: etcd_client::Error) -> StorageError {
    use etcd_client::Error as E;
    match err {
        E::GRpcStatus(status) => {
            let message = status.message().to_string();
            if message.contains("required revision has been compacted") {
                return StorageError::TooOld {
                    requested: 0,
                    oldest: 0,
                };
            }
            if message.contains("required revision is a future revision") {
                return StorageError::TooLargeResourceVersion {
                    requested: 0,
                    current: 0,
                };
            }
            // A connection that breaks mid-request (etcd killed or restarting) surfaces as
            // code Unknown with a transport error as its source: that is unavailability too.
            if status.code() == Code::Unknown && caused_by_transport(&status) {
                return StorageError::Unavailable(format!("etcd connection lost: {message}"));
            }
            match status.code() {
                Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled => {
                    StorageError::Unavailable(message)
                }
                Code::InvalidArgument | Code::OutOfRange => StorageError::Invalid(message),
                _ => StorageError::Internal(format!("etcd: {status}")),
            }
        }
        E::TransportError(e) => StorageError::Unavailable(format!("etcd transport: {e}")),
        E::IoError(e) => StorageError::Unavailable(format!("etcd io: {e}")),
        E::WatchError(e) => StorageError::Unavailable(format!("etcd watch: {e}")),
        E::InvalidArgs(e) => StorageError::Invalid(e),
        other => StorageError::Internal(format!("etcd: {other}")),
    }
}

fn caused_by_transport(status: &tonic::Status) -> bool {
    let mut source = std::error::Error::source(status);
    while let Some(err) = source {
        if err.is::<tonic::transport::Error>() || err.is::<std::io::Error>() {
            return true;
        }
        source = err.source();
    }
    false
}

fn range_options(range: &KeyRange) -> (Vec<u8>, GetOptions) {
    let mut opts = GetOptions::new();
    if let Some(end) = &range.end {
        opts = opts.with_range(end.clone());
    }
    (range.start.clone(), opts)
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> i64 {
    header.map(|h| h.revision()).unwrap_or_default()
}

/// The value read by a txn's else branch.
fn current_from(responses: Vec<TxnOpResponse>) -> Option<KeyValue> {
    responses.into_iter().find_map(|r| match r {
        TxnOpResponse::Get(get) => get.kvs().first().map(convert_kv),
        _ => None,
    })
}

#[async_trait]
impl Backend for EtcdBackend {
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        let range = req.range.unwrap_or_else(|| KeyRange::prefix(""));
        let (key, mut opts) = range_options(&range);
        if req.revision > 0 {
            opts = opts.with_revision(req.revision);
        }
        if req.limit > 0 {
            opts = opts.with_limit(req.limit as i64);
        }
        if req.min_mod_revision > 0 {
            opts = opts.with_min_mod_revision(req.min_mod_revision);
        }
        if req.keys_only {
            opts = opts.with_keys_only();
        }
        if req.count_only {
            opts = opts.with_count_only();
        }
        let resp = self
            .members
            .read(|mut c| {
                let (key, opts) = (key.clone(), opts.clone());
                async move { c.kv.get(key, Some(opts)).await }
            })
            .await
            .map_err(|e| with_requested(map_error(e), req.revision))?;
        Ok(RangeResponse {
            kvs: resp.kvs().iter().map(convert_kv).collect(),
            more: resp.more(),
            count: resp.count(),
            revision: header_revision(resp.header()),
        })
    }

    async fn put_if(
        &self,
        key: &str,
        value: Bytes,
        expected: i64,
        ttl: Option<Duration>,
    ) -> Result<TxnOutcome> {
        // No prev_kv: reading the replaced value back costs etcd a range per write, and the
        // caller compared against that pair (upstream's GuaranteedUpdate asks none either).
        let mut options = PutOptions::new();
        if let Some(ttl) = ttl {
            options = options.with_lease(self.leases.lease_for(ttl).await?);
        }
        let put = TxnOp::put(key, value.to_vec(), Some(options));
        let revision = match self.compare_and(key, expected, put).await? {
            Ok((revision, _)) => revision,
            Err(failed) => return Ok(failed),
        };
        // A created key's facts follow from the revision; an updated one's are the caller's.
        let created = expected == 0;
        let kv = KeyValue {
            key: key.to_string(),
            value,
            create_revision: if created { revision } else { 0 },
            mod_revision: revision,
            version: i64::from(created),
        };
        Ok(TxnOutcome::Applied {
            revision,
            prev: None,
            kv: Some(kv),
        })
    }

    async fn delete_if(&self, key: &str, expected: i64) -> Result<TxnOutcome> {
        let delete = TxnOp::delete(key, Some(etcd_client::DeleteOptions::new().with_prev_key()));
        let (revision, responses) = match self.compare_and(key, expected, delete).await? {
            Ok(applied) => applied,
            Err(failed) => return Ok(failed),
        };
        let prev = responses.into_iter().find_map(|r| match r {
            TxnOpResponse::Delete(del) => del.prev_kvs().first().map(convert_kv),
            _ => None,
        });
        Ok(TxnOutcome::Applied {
            revision,
            prev,
            kv: None,
        })
    }

    async fn watch(
        &self,
        range: KeyRange,
        start_revision: i64,
        with_prev: bool,
    ) -> Result<BackendWatch> {
        let mut opts = WatchOptions::new().with_progress_notify();
        if with_prev {
            opts = opts.with_prev_key();
        }
        if let Some(end) = &range.end {
            opts = opts.with_range(end.clone());
        }
        if start_revision > 0 {
            opts = opts.with_start_revision(start_revision);
        }
        // Opening the watch is a read: a dead member's refusal moves it to a live one. A stream
        // that breaks later ends with an error, and the watch cache resumes from the revision
        // after the last one it saw, on whichever member is healthy then.
        let stream = self
            .members
            .read(|mut c| {
                let (key, opts) = (range.start.clone(), opts.clone());
                async move { c.watch.watch(key, Some(opts)).await }
            })
            .await
            .map_err(map_error)?;
        let (sender, responses) = stream.split();
        let sender = Arc::new(Mutex::new(sender));
        let progress = Arc::new(move || {
            let sender = sender.clone();
            tokio::spawn(async move {
                // A failed request means the stream is gone; the message side reports that.
                let _ = sender.lock().await.request_progress().await;
            });
        });
        let messages = responses
            .filter_map(move |resp| async move {
                match resp {
                    Err(e) => Some(Err(map_error(e))),
                    Ok(resp) => convert_watch_response(resp, start_revision),
                }
            })
            .boxed();
        Ok(BackendWatch { messages, progress })
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        let compact = self
            .members
            .write(|mut c| async move { c.kv.compact(revision, None).await });
        match compact.await {
            Ok(_) => Ok(()),
            Err(e) => Err(with_requested(map_error(e), revision)),
        }
    }

    async fn current_revision(&self) -> Result<i64> {
        // A count-only read of one key is the cheapest request whose header carries the
        // store's revision.
        let resp = self
            .members
            .read(|mut c| async move {
                c.kv.get("/", Some(GetOptions::new().with_count_only()))
                    .await
            })
            .await
            .map_err(map_error)?;
        Ok(header_revision(resp.header()))
    }

    /// Upstream's etcd check: the cluster answers a read within 2 s (its default
    /// `--etcd-healthcheck-timeout`), whichever member answers it. The members' own states go
    /// into the reason, which the health endpoints log.
    async fn check_health(&self) -> Result<()> {
        let check = self.current_revision();
        let failure = match tokio::time::timeout(Duration::from_secs(2), check).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(_) => "no member answered within 2s".to_string(),
        };
        Err(StorageError::Unavailable(format!(
            "error getting data from etcd: {failure}; endpoints: {}",
            self.describe_endpoints()
        )))
    }

    fn name(&self) -> &'static str {
        "etcd"
    }
}

/// Fills in the revision the caller asked for, which etcd's error messages do not carry.
fn with_requested(err: StorageError, revision: i64) -> StorageError {
    match err {
        StorageError::TooOld { oldest, .. } => StorageError::TooOld {
            requested: revision,
            oldest,
        },
        StorageError::TooLargeResourceVersion { current, .. } => {
            StorageError::TooLargeResourceVersion {
                requested: revision,
                current,
            }
        }
        other => other,
    }
}

fn convert_watch_response(
    resp: etcd_client::WatchResponse,
    start_revision: i64,
) -> Option<Result<WatchMessage>> {
    if resp.canceled() {
        if resp.compact_revision() > 0 {
            return Some(Err(StorageError::TooOld {
                requested: start_revision,
                oldest: resp.compact_revision(),
            }));
        }
        return Some(Err(StorageError::Unavailable(format!(
            "etcd canceled the watch: {}",
            resp.cancel_reason()
        ))));
    }
    if resp.created() && resp.events().is_empty() {
        return None;
    }
    if resp.events().is_empty() {
        return Some(Ok(WatchMessage::Progress(header_revision(resp.header()))));
    }
    let events = resp
        .events()
        .iter()
        .filter_map(|ev| {
            let kv = convert_kv(ev.kv()?);
            let kind = match ev.event_type() {
                etcd_client::EventType::Put => RawEventKind::Put,
                etcd_client::EventType::Delete => RawEventKind::Delete,
            };
            Some(RawEvent {
                kind,
                kv,
                prev: ev.prev_kv().map(convert_kv),
            })
        })
        .collect();
    Some(Ok(WatchMessage::Events(events)))
}
