//! The code only start-up ran leaves memory when start-up is over, as the kernel frees its
//! own init sections after boot.
//!
//! On a fault in a file mapping the kernel also maps the neighbouring pages it has cached
//! ("fault-around", 64 KiB), and read-ahead caches more: starting the server touches code
//! across most of a 24 MB executable (bootstrap policy, every resource installed, every
//! controller started), and about 16 MB of it stayed mapped in an idle server, 3 MB of which
//! an idle server runs. Paging out the executable's read-only mappings (MADV_PAGEOUT) once
//! start-up is over reclaims those pages, from this process and from the page cache when no
//! other process maps them; what runs afterwards is read back as it runs. The contents never
//! change: the mappings are read-only, and paging out is reclaim, not discard.

use std::fs;
use std::ptr::NonNull;

use nix::sys::mman::{madvise, MmapAdvise};
use tracing::debug;

/// Pages out the executable's read-only mappings; returns how many it advised. Anything
/// unexpected (no /proc, a kernel without MADV_PAGEOUT) leaves them as they are.
pub fn page_out() -> usize {
    let (Ok(exe), Ok(maps)) = (
        fs::read_link("/proc/self/exe"),
        fs::read_to_string("/proc/self/maps"),
    ) else {
        return 0;
    };
    let Some(exe) = exe.to_str() else {
        return 0;
    };
    let advised = maps
        .lines()
        .filter_map(|line| read_only_mapping_of(line, exe))
        .filter(|&(start, len)| advise_page_out(start, len))
        .count();
    debug!(mappings = advised, "paged out the start-up's code");
    advised
}

/// `(start, length)` of a mapping of `path` that is readable and not writable.
fn read_only_mapping_of(line: &str, path: &str) -> Option<(usize, usize)> {
    let mut fields = line.split_ascii_whitespace();
    let range = fields.next()?;
    let perms = fields.next()?.as_bytes();
    // Then offset, device and inode; the path is the rest (it may hold spaces).
    let rest: Vec<&str> = fields.skip(3).collect();
    if rest.join(" ") != path || perms.first() != Some(&b'r') || perms.get(1) != Some(&b'-') {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    Some((start, end.checked_sub(start)?))
}

fn advise_page_out(start: usize, len: usize) -> bool {
    let Some(addr) = NonNull::new(start as *mut std::ffi::c_void) else {
        return false;
    };
    // SAFETY: the range is a whole mapping of this process as /proc/self/maps lists it, and
    // MADV_PAGEOUT only reclaims its pages: every later access reads the same contents back.
    unsafe { madvise(addr, len, MmapAdvise::MADV_PAGEOUT) }.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_lines_are_read() {
        let exe = "/usr/bin/kube apiserver";
        let code = "55d0a0000000-55d0a1000000 r-xp 00200000 fe:01 1234 /usr/bin/kube apiserver";
        assert_eq!(
            read_only_mapping_of(code, exe),
            Some((0x55d0a0000000, 0x1000000))
        );
        let rodata = "55d09f000000-55d0a0000000 r--p 00000000 fe:01 1234 /usr/bin/kube apiserver";
        assert!(read_only_mapping_of(rodata, exe).is_some());
        let data = "55d0a2000000-55d0a2001000 rw-p 00300000 fe:01 1234 /usr/bin/kube apiserver";
        assert_eq!(read_only_mapping_of(data, exe), None);
        let other = "7f0000000000-7f0000001000 r-xp 00000000 fe:01 99 /usr/lib/libc.so.6";
        assert_eq!(read_only_mapping_of(other, exe), None);
        assert_eq!(read_only_mapping_of("garbage", exe), None);
    }

    /// The test binary pages out its own code and goes on running it; the code mapping's
    /// resident size drops.
    #[test]
    fn paged_out_code_leaves_memory_and_still_runs() {
        let resident_code = || {
            let exe = fs::read_link("/proc/self/exe").expect("exe");
            let exe = exe.to_str().expect("utf-8 path").to_string();
            let smaps = fs::read_to_string("/proc/self/smaps").expect("smaps");
            let mut in_code = false;
            let mut kb = 0;
            for line in smaps.lines() {
                let fields: Vec<&str> = line.split_ascii_whitespace().collect();
                if fields
                    .first()
                    .is_some_and(|f| f.contains('-') && !f.ends_with(':'))
                {
                    in_code = fields.get(1) == Some(&"r-xp")
                        && read_only_mapping_of(line, &exe).is_some();
                } else if in_code && fields.first() == Some(&"Rss:") {
                    kb += fields
                        .get(1)
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(0);
                }
            }
            kb
        };
        let before = resident_code();
        assert!(page_out() >= 1);
        let after = resident_code();
        assert!(
            after < before,
            "code resident before {before} kB, after {after} kB"
        );
        // Still runs (this very code, faulted back in).
        assert_eq!(read_only_mapping_of("x", "y"), None);
    }
}
