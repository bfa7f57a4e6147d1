//! The server's own PKI, generated once under `<data-dir>/pki` as k3s and kube-apiserver's
//! self-signed serving do: a CA, a serving certificate it signs, and an admin client
//! certificate (CN=system:admin, O=system:masters) for the written kubeconfig.
//!
//! A CA that exists is never replaced (the kubeconfigs handed out trust it). A leaf that
//! exists is kept while it is signed by that CA, has at least [`RENEW_BEFORE_DAYS`] left and,
//! for the serving certificate, names every wanted SAN; otherwise it is issued again by the
//! same CA, so kubeconfigs stay valid. Private keys are written 0600.

use std::collections::BTreeSet;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use chrono::Datelike;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use thiserror::Error;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

/// The CA's validity (k3s and kubeadm: ten years).
const CA_DAYS: i64 = 3650;
/// A leaf's validity (kube-apiserver's self-signed serving certificate: one year).
const LEAF_DAYS: i64 = 365;
/// A leaf with fewer days left is issued again at start (k3s: 90 days).
pub const RENEW_BEFORE_DAYS: i64 = 90;

pub const ADMIN_USER: &str = "system:admin";
pub const ADMIN_GROUP: &str = "system:masters";

#[derive(Debug, Error)]
pub enum CertError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("generating a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("invalid subject alternative name {0:?}")]
    San(String),
}

/// Where the generated files live.
#[derive(Debug, Clone)]
pub struct Pki {
    pub dir: PathBuf,
}

/// What [`ensure`] found or made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ensured {
    pub ca_created: bool,
    pub serving_issued: bool,
    pub admin_issued: bool,
}

impl Pki {
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
    pub fn ca_cert(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }
    pub fn ca_key(&self) -> PathBuf {
        self.dir.join("ca.key")
    }
    pub fn serving_cert(&self) -> PathBuf {
        self.dir.join("apiserver.crt")
    }
    pub fn serving_key(&self) -> PathBuf {
        self.dir.join("apiserver.key")
    }
    pub fn admin_cert(&self) -> PathBuf {
        self.dir.join("admin.crt")
    }
    pub fn admin_key(&self) -> PathBuf {
        self.dir.join("admin.key")
    }
}

/// One wanted subject alternative name: an address or a DNS name (lower case).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum San {
    Ip(IpAddr),
    Dns(String),
}

impl San {
    pub fn parse(text: &str) -> Result<Self, CertError> {
        let text = text.trim();
        if let Ok(ip) = text.trim_start_matches('[').trim_end_matches(']').parse() {
            return Ok(San::Ip(ip));
        }
        let valid = !text.is_empty()
            && text.len() <= 253
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '*' | '_'));
        if !valid {
            return Err(CertError::San(text.to_string()));
        }
        Ok(San::Dns(text.to_ascii_lowercase()))
    }

    fn to_rcgen(&self) -> Result<SanType, CertError> {
        Ok(match self {
            San::Ip(ip) => SanType::IpAddress(*ip),
            San::Dns(name) => SanType::DnsName(
                name.clone()
                    .try_into()
                    .map_err(|_| CertError::San(name.clone()))?,
            ),
        })
    }
}

/// The serving certificate's names, as k3s and kube-apiserver give them: loopback, the host
/// name, the advertised and specific bind addresses, the `kubernetes` Service's names and
/// ClusterIP, and every `--tls-san`.
pub fn serving_sans(
    hostname: Option<&str>,
    addresses: &[IpAddr],
    service_ip: IpAddr,
    extra: &[String],
) -> Result<Vec<San>, CertError> {
    let mut sans = BTreeSet::new();
    for name in [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ] {
        sans.insert(San::Dns(name.into()));
    }
    sans.insert(San::Ip(IpAddr::from([127, 0, 0, 1])));
    sans.insert(San::Ip(std::net::Ipv6Addr::LOCALHOST.into()));
    sans.insert(San::Ip(service_ip));
    for ip in addresses.iter().filter(|ip| !ip.is_unspecified()) {
        sans.insert(San::Ip(*ip));
    }
    // A host name that is not a valid DNS name (rare) is left out rather than refused.
    if let Some(Ok(host)) = hostname.filter(|h| !h.is_empty()).map(San::parse) {
        sans.insert(host);
    }
    for name in extra.iter().filter(|n| !n.trim().is_empty()) {
        sans.insert(San::parse(name)?);
    }
    Ok(sans.into_iter().collect())
}

/// The machine's host name, as the kernel has it.
pub fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

/// Makes what is missing or stale: the CA (only when absent), the serving certificate for
/// `sans` (when `serving` is given) and the admin client certificate.
pub fn ensure(pki: &Pki, serving: Option<&[San]>) -> Result<Ensured, CertError> {
    create_private_dir(&pki.dir)?;
    let mut ensured = Ensured::default();
    let (ca_key, ca_pem, ca_created) = load_or_create_ca(&pki.ca_cert(), &pki.ca_key())?;
    ensured.ca_created = ca_created;
    let ca_der = first_der(&ca_pem, &pki.ca_cert())?;
    let issuer = Issuer::from_ca_cert_der(&ca_der.as_slice().into(), &ca_key).map_err(|e| {
        CertError::Invalid {
            path: pki.ca_cert(),
            message: e.to_string(),
        }
    })?;
    if let Some(sans) = serving {
        let wanted: BTreeSet<San> = sans.iter().cloned().collect();
        if !leaf_is_current(&pki.serving_cert(), &ca_der, Some(&wanted)) {
            let mut params = leaf_params("kube-apiserver", None)?;
            params.subject_alt_names = sans.iter().map(San::to_rcgen).collect::<Result<_, _>>()?;
            params.key_usages = vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyEncipherment,
            ];
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            issue(&params, &issuer, &pki.serving_cert(), &pki.serving_key())?;
            ensured.serving_issued = true;
        }
    }
    if !leaf_is_current(&pki.admin_cert(), &ca_der, None) {
        let mut params = leaf_params(ADMIN_USER, Some(ADMIN_GROUP))?;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        issue(&params, &issuer, &pki.admin_cert(), &pki.admin_key())?;
        ensured.admin_issued = true;
    }
    Ok(ensured)
}

/// The CA at `cert`/`key`, made when both are absent (whether it was made is the third
/// value); one half without the other is refused rather than overwritten.
pub(super) fn load_or_create_ca(
    cert: &Path,
    key: &Path,
) -> Result<(KeyPair, String, bool), CertError> {
    match (cert.exists(), key.exists()) {
        (true, true) => Ok((
            KeyPair::from_pem(&read(key)?).map_err(|e| invalid(key, e))?,
            read(cert)?,
            false,
        )),
        (false, false) => {
            let pair = KeyPair::generate()?;
            let made = ca_params().self_signed(&pair)?;
            write_file(key, &pair.serialize_pem(), true)?;
            write_file(cert, &made.pem(), false)?;
            Ok((pair, made.pem(), true))
        }
        (has_cert, _) => {
            let missing = if has_cert { key } else { cert };
            Err(CertError::Invalid {
                path: missing.to_path_buf(),
                message: "missing while the other half of the CA exists; not generating a new CA over it (remove both to start over)".into(),
            })
        }
    }
}

fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(
        DnType::CommonName,
        format!("apiserver-rs-ca@{}", chrono::Utc::now().timestamp()),
    );
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut params, CA_DAYS);
    params
}

pub(super) fn leaf_params(
    common_name: &str,
    organization: Option<&str>,
) -> Result<CertificateParams, CertError> {
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    if let Some(org) = organization {
        name.push(DnType::OrganizationName, org);
    }
    name.push(DnType::CommonName, common_name);
    params.distinguished_name = name;
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, LEAF_DAYS);
    Ok(params)
}

/// Valid from a day ago (clocks differ) to `days` from now.
fn set_validity(params: &mut CertificateParams, days: i64) {
    let day = |d: chrono::DateTime<chrono::Utc>| {
        rcgen::date_time_ymd(d.year(), d.month() as u8, d.day() as u8)
    };
    let now = chrono::Utc::now();
    params.not_before = day(now - chrono::Duration::days(1));
    params.not_after = day(now + chrono::Duration::days(days));
}

pub(super) fn issue(
    params: &CertificateParams,
    issuer: &Issuer<'_, &KeyPair>,
    cert_path: &Path,
    key_path: &Path,
) -> Result<(), CertError> {
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, issuer)?;
    write_file(key_path, &key.serialize_pem(), true)?;
    write_file(cert_path, &cert.pem(), false)?;
    Ok(())
}

/// Whether the leaf at `path` is signed by the CA, not near its end, and (when `sans` is
/// given) names all of them.
pub(super) fn leaf_is_current(path: &Path, ca_der: &[u8], sans: Option<&BTreeSet<San>>) -> bool {
    let Ok(pem) = std::fs::read_to_string(path) else {
        return false;
    };
    let Ok(der) = first_der(&pem, path) else {
        return false;
    };
    let (Ok((_, leaf)), Ok((_, ca))) = (
        X509Certificate::from_der(&der),
        X509Certificate::from_der(ca_der),
    ) else {
        return false;
    };
    if leaf.verify_signature(Some(ca.public_key())).is_err() {
        return false;
    }
    let days_left = leaf
        .validity()
        .time_to_expiration()
        .map(|d| d.whole_days())
        .unwrap_or(0);
    if days_left < RENEW_BEFORE_DAYS {
        return false;
    }
    match sans {
        None => true,
        Some(wanted) => {
            let have = names_of(&leaf);
            wanted.iter().all(|san| have.contains(san))
        }
    }
}

/// The DNS names and addresses a certificate names.
pub fn names_of(cert: &X509Certificate<'_>) -> BTreeSet<San> {
    let mut names = BTreeSet::new();
    if let Ok(Some(ext)) = cert.subject_alternative_name() {
        for name in &ext.value.general_names {
            match name {
                GeneralName::DNSName(dns) => {
                    names.insert(San::Dns(dns.to_ascii_lowercase()));
                }
                GeneralName::IPAddress(bytes) => {
                    let ip = match bytes.len() {
                        4 => <[u8; 4]>::try_from(*bytes).ok().map(IpAddr::from),
                        16 => <[u8; 16]>::try_from(*bytes).ok().map(IpAddr::from),
                        _ => None,
                    };
                    names.extend(ip.map(San::Ip));
                }
                _ => {}
            }
        }
    }
    names
}

/// The DER of the first certificate in a PEM text.
pub fn first_der(pem: &str, path: &Path) -> Result<Vec<u8>, CertError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .and_then(Result::ok)
        .map(|c| c.to_vec())
        .ok_or_else(|| CertError::Invalid {
            path: path.to_path_buf(),
            message: "no PEM certificate".into(),
        })
}

fn invalid(path: &Path, e: impl std::fmt::Display) -> CertError {
    CertError::Invalid {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

pub fn read(path: &Path) -> Result<String, CertError> {
    std::fs::read_to_string(path).map_err(|source| CertError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn create_private_dir(dir: &Path) -> Result<(), CertError> {
    let io = |source| CertError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(io)
}

/// Writes `contents` through a temporary file renamed over `path` (never half a file);
/// private files are 0600 from their creation.
pub fn write_file(path: &Path, contents: &str, private: bool) -> Result<(), CertError> {
    let io = |source| CertError::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, if private { 0o600 } else { 0o644 });
    let mut file = options.open(&tmp).map_err(io)?;
    file.write_all(contents.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(io)
}
