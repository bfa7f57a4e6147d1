//! The sandbox's network namespace, as the CRI runtimes make it (`/var/run/netns/cni-<id>`):
//! a thread of its own unshares its network namespace and bind-mounts it onto the file, so
//! the namespace outlives the thread and plugins reach it by path; removal unmounts and
//! unlinks it.

use std::io;
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{unshare, CloneFlags};

/// The path of a sandbox's namespace under `dir`.
pub fn path_for(dir: &Path, sandbox_id: &str) -> PathBuf {
    dir.join(format!("cni-{sandbox_id}"))
}

/// Creates a new network namespace pinned at `path`; a leftover at that path goes first.
pub async fn create(path: PathBuf) -> io::Result<()> {
    tokio::task::spawn_blocking(move || create_blocking(&path))
        .await
        .map_err(io::Error::other)?
}

fn create_blocking(path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    remove_blocking(path)?;
    std::fs::File::create(path)?;
    let target = path.to_path_buf();
    // unshare moves only the calling thread, and that thread is never used for anything
    // else: a pooled thread left in the new namespace would run other work there.
    let pinned = std::thread::spawn(move || -> nix::Result<()> {
        unshare(CloneFlags::CLONE_NEWNET)?;
        mount(
            Some("/proc/thread-self/ns/net"),
            &target,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
    })
    .join()
    .map_err(|_| io::Error::other("the namespace thread panicked"))?;
    if let Err(e) = pinned {
        let _ = std::fs::remove_file(path);
        return Err(io::Error::from(e));
    }
    Ok(())
}

/// Whether this process may create network namespaces (root alone is not enough in an
/// unprivileged container): a throwaway thread tries.
pub fn can_create() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not running as root, which CNI network namespaces need".into());
    }
    std::thread::spawn(|| unshare(CloneFlags::CLONE_NEWNET))
        .join()
        .map_err(|_| "the namespace thread panicked".to_string())?
        .map_err(|e| format!("cannot create network namespaces: {e}"))
}

/// Unmounts and unlinks the namespace at `path`; one that is not there is no error.
pub async fn remove(path: PathBuf) -> io::Result<()> {
    tokio::task::spawn_blocking(move || remove_blocking(&path))
        .await
        .map_err(io::Error::other)?
}

fn remove_blocking(path: &Path) -> io::Result<()> {
    match umount2(path, MntFlags::MNT_DETACH) {
        // EINVAL: not a mount point (a file whose mount failed or is already gone).
        Ok(()) | Err(nix::errno::Errno::EINVAL) | Err(nix::errno::Errno::ENOENT) => {}
        Err(e) => return Err(io::Error::from(e)),
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_namespace_is_created_and_removed() {
        if let Err(why) = can_create() {
            eprintln!("skipped: {why}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "t1");
        create(path.clone()).await.unwrap();
        let ours = std::fs::read_link("/proc/thread-self/ns/net").unwrap();
        // The pinned file is an nsfs inode other than this thread's namespace.
        let meta = std::fs::metadata(&path).unwrap();
        let host = std::fs::metadata("/proc/thread-self/ns/net").unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_ne!(meta.ino(), host.ino(), "{ours:?}");
        // Creating again replaces it.
        create(path.clone()).await.unwrap();
        remove(path.clone()).await.unwrap();
        assert!(!path.exists());
        remove(path).await.unwrap();
    }
}
