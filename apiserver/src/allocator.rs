//! How the process holds memory it no longer uses: given back to the system promptly, so that
//! an idle server is small and the memory of a burst (a large list, a relist) comes back.

use libmimalloc_sys::{mi_option_set, mi_option_t};

/// mimalloc's `mi_option_purge_delay` (its position in `mi_option_e`, mimalloc.h, the same in
/// v2 and v3); the sys crate names only a few options.
const MI_OPTION_PURGE_DELAY: mi_option_t = 15;

/// Called first thing in `main`, before other threads start (and before logging: the caller
/// logs the error of the one step that can fail).
///
/// - Transparent huge pages off for this process: mimalloc asks for them on its arenas, and
///   then any touched byte keeps a whole 2 MiB page resident (about 45 MB of an idle server
///   were such pages, on a kernel in `madvise` mode; `always` mode does the same unasked).
///   Children inherit the setting; the only ones are short-lived CNI plugins.
/// - Freed pages are returned at once rather than after mimalloc's default second: its purge
///   runs only when the allocator is called, and an idle server calls it rarely, so a delay
///   left a burst's memory resident long after it ended.
pub fn return_memory_promptly() -> nix::Result<()> {
    // SAFETY: sets one integer option; mimalloc reads it at each purge.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    nix::sys::prctl::set_thp_disable(true)
}

#[cfg(test)]
mod tests {
    use libmimalloc_sys::mi_option_get;

    use super::*;

    /// The option is named by number: a mimalloc whose enum moved would silently set another
    /// one. The purge delay is the option whose default is 1000 ms (10 in v2).
    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // SAFETY: reads and sets integer options.
        let before = unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert!(before == 1000 || before == 10, "{before}");
        }
        return_memory_promptly().expect("prctl on Linux");
        assert_eq!(unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }, 0);
        assert_eq!(nix::sys::prctl::get_thp_disable(), Ok(true));
    }
}
