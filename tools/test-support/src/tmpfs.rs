//! A small tmpfs for tests of a full disk, and a ballast file to fill it.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A tmpfs mounted at `<temp dir>/data`; unmounted (and the temp dir removed) when dropped,
/// also when the test fails. Declare it before anything that keeps files open in it (a
/// server), so those are dropped, and let go of the files, first.
pub struct Tmpfs {
    dir: Option<tempfile::TempDir>,
    mount_point: PathBuf,
}

impl Tmpfs {
    /// None, with the reason printed, when this process may not mount (not root, or no
    /// mount in this container); under `CI` (which runs as root) that fails the test instead.
    pub fn mount(size: &str) -> Option<Self> {
        let skip = |why: String| {
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("SKIPPED: {why}");
        };
        let root = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .map(|uids| uids.split_whitespace().next() == Some("0"))
            })
            .unwrap_or(false);
        if !root {
            skip("mounting a small tmpfs needs root".into());
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let mount_point = dir.path().join("data");
        std::fs::create_dir(&mount_point).expect("mount point");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&mount_point)
            .status();
        match status {
            Ok(s) if s.success() => Some(Self {
                dir: Some(dir),
                mount_point,
            }),
            other => {
                skip(format!("mount -t tmpfs failed: {other:?}"));
                None
            }
        }
    }

    /// The mounted filesystem.
    pub fn path(&self) -> &Path {
        &self.mount_point
    }

    /// Hands over the temp dir the filesystem is mounted in (as `data`), for a server that
    /// keeps its data in `<dir>/data`. This guard still unmounts it, and then removes the dir.
    pub fn take_dir(&mut self) -> tempfile::TempDir {
        self.dir.take().expect("temp dir taken once")
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Whoever used the files lets go of them shortly after it is dropped.
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut ok = false;
        while !ok && Instant::now() < deadline {
            ok = Command::new("umount")
                .arg(&self.mount_point)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        if !ok {
            // Something still holds a file there: detach it so the temp dir can go.
            let _ = Command::new("umount")
                .arg("-l")
                .arg(&self.mount_point)
                .status();
        }
        if let Some(parent) = self.mount_point.parent() {
            let _ = std::fs::remove_dir_all(parent);
        }
    }
}

/// Fills the filesystem `path` is on with that one file, then frees `leave` bytes of it.
pub fn fill(path: &Path, leave: u64) {
    let mut file = File::create(path).expect("ballast");
    let chunk = vec![0xa5u8; 256 << 10];
    loop {
        match file.write_all(&chunk) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::StorageFull => break,
            Err(e) => panic!("writing the ballast: {e}"),
        }
    }
    let len = file.metadata().expect("ballast size").len();
    OpenOptions::new()
        .write(true)
        .open(path)
        .expect("ballast")
        .set_len(len.saturating_sub(leave))
        .expect("shrink the ballast");
}
