//! The audit log file with upstream's rotation (lumberjack's, behind `--audit-log-maxsize`,
//! `--audit-log-maxbackup` and `--audit-log-maxage`): a write that would take the file past
//! its size first renames it to `<name>-<UTC time>.<ext>` and starts a new one; then the
//! oldest backups beyond the count, and those older than the age, are removed.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};

/// lumberjack's size when none is given.
const DEFAULT_MAX_MEGABYTES: u64 = 100;
const BACKUP_TIME: &str = "%Y-%m-%dT%H-%M-%S%.3f";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    pub max_bytes: u64,
    /// 0: keep every backup.
    pub max_backups: usize,
    /// Zero: keep backups of any age.
    pub max_age: Duration,
}

impl Rotation {
    /// From the flags: megabytes (0: 100), a count, days.
    pub fn new(max_megabytes: u64, max_backups: usize, max_age_days: u64) -> Self {
        let megabytes = if max_megabytes == 0 {
            DEFAULT_MAX_MEGABYTES
        } else {
            max_megabytes
        };
        Rotation {
            max_bytes: megabytes.saturating_mul(1024 * 1024),
            max_backups,
            max_age: Duration::from_secs(max_age_days.saturating_mul(24 * 3600)),
        }
    }
}

pub struct RotatingFile {
    path: PathBuf,
    file: File,
    size: u64,
    rotation: Rotation,
}

impl RotatingFile {
    /// Opens (creating it, and its directory, private to the server's user as upstream
    /// does) the file at `path` for appending.
    pub fn open(path: &Path, rotation: Rotation) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let mut dirs = std::fs::DirBuilder::new();
            dirs.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut dirs, 0o700);
            dirs.create(dir)?;
        }
        let file = append(path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            path: path.to_path_buf(),
            file,
            size,
            rotation,
        })
    }

    fn rotate(&mut self) -> io::Result<()> {
        let backup = self.backup_name(Utc::now());
        std::fs::rename(&self.path, &backup)?;
        self.file = append(&self.path)?;
        self.size = 0;
        self.remove_old_backups();
        Ok(())
    }

    /// `<dir>/<stem>-<time>.<ext>`, as lumberjack names backups.
    fn backup_name(&self, at: DateTime<Utc>) -> PathBuf {
        let (stem, ext) = self.stem_and_ext();
        self.path
            .with_file_name(format!("{stem}-{}{ext}", at.format(BACKUP_TIME)))
    }

    fn stem_and_ext(&self) -> (String, String) {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match name.rfind('.') {
            Some(dot) if dot > 0 => (name[..dot].to_string(), name[dot..].to_string()),
            _ => (name, String::new()),
        }
    }

    /// The backups of this log, newest first.
    fn backups(&self) -> Vec<(DateTime<Utc>, PathBuf)> {
        let (stem, ext) = self.stem_and_ext();
        let prefix = format!("{stem}-");
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut backups: Vec<(DateTime<Utc>, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let time = name.strip_prefix(&prefix)?.strip_suffix(ext.as_str())?;
                let at = NaiveDateTime::parse_from_str(time, BACKUP_TIME).ok()?;
                Some((at.and_utc(), entry.path()))
            })
            .collect();
        backups.sort_by_key(|b| std::cmp::Reverse(b.0));
        backups
    }

    fn remove_old_backups(&self) {
        let now = Utc::now();
        let too_old = |at: &DateTime<Utc>| {
            !self.rotation.max_age.is_zero()
                && (now - *at).to_std().unwrap_or_default() > self.rotation.max_age
        };
        for (i, (at, path)) in self.backups().iter().enumerate() {
            let beyond_count = self.rotation.max_backups != 0 && i >= self.rotation.max_backups;
            if beyond_count || too_old(at) {
                if let Err(e) = std::fs::remove_file(path) {
                    tracing::warn!(backup = %path.display(), error = %e, "could not remove an old audit log");
                }
            }
        }
    }
}

fn append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.size > 0 && self.size + buf.len() as u64 > self.rotation.max_bytes {
            self.rotate()?;
        }
        let written = self.file.write(buf)?;
        self.size += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn rotates_past_the_size_and_keeps_the_newest_backups() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("logs/audit.log");
        let rotation = Rotation {
            max_bytes: 10,
            max_backups: 2,
            max_age: Duration::ZERO,
        };
        let mut log = RotatingFile::open(&path, rotation).expect("open");
        // Old backups beyond the count go; other files stay.
        std::fs::write(
            path.with_file_name("audit-2000-01-01T00-00-00.000.log"),
            "x",
        )
        .expect("old backup");
        std::fs::write(path.with_file_name("other.log"), "x").expect("other file");
        for line in ["aaaa\n", "bbbb\n", "cccc\n", "dddd\n", "eeee\n"] {
            log.write_all(line.as_bytes()).expect("write");
            // Backups are named to the millisecond.
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(std::fs::read_to_string(&path).expect("log"), "eeee\n");
        let names = files(path.parent().expect("dir"));
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(
            names.contains(&"other.log".to_string()) && names.contains(&"audit.log".to_string())
        );
        let backups: Vec<String> = names
            .iter()
            .filter(|n| n.starts_with("audit-"))
            .map(|n| std::fs::read_to_string(path.with_file_name(n)).expect("backup"))
            .collect();
        assert_eq!(backups, ["aaaa\nbbbb\n", "cccc\ndddd\n"]);
    }

    #[test]
    fn backups_older_than_the_age_go() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("audit");
        let rotation = Rotation {
            max_bytes: 4,
            max_backups: 0,
            max_age: Duration::from_secs(24 * 3600),
        };
        std::fs::write(dir.path().join("audit-2000-01-01T00-00-00.000"), "x").expect("old");
        let mut log = RotatingFile::open(&path, rotation).expect("open");
        log.write_all(b"abc\n").expect("write");
        log.write_all(b"def\n").expect("write");
        let names = files(dir.path());
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.iter().all(|n| !n.contains("2000")), "{names:?}");
    }

    #[test]
    fn the_size_flag_defaults_to_100_megabytes() {
        assert_eq!(Rotation::new(0, 0, 0).max_bytes, 100 * 1024 * 1024);
        assert_eq!(
            Rotation::new(5, 3, 2).max_age,
            Duration::from_secs(2 * 86400)
        );
    }
}
