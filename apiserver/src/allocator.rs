//! How the process holds memory it no longer uses: given back to the system promptly, so that
//! an idle server is small and the memory of a burst (a large list, a relist) comes back.
//!
//! Two mimalloc defaults change (an environment variable such as `MIMALLOC_ALLOW_THP=1` still
//! overrides them):
//! - Transparent huge pages off: mimalloc asks for them on its arenas, and then any touched
//!   byte keeps a whole 2 MiB page resident (about 45 MB of an idle server were such pages,
//!   on a kernel in `madvise` mode; `always` mode does the same unasked). With the option
//!   off, mimalloc also turns them off for the process (`PR_SET_THP_DISABLE`), which
//!   children inherit; the only ones are short-lived CNI plugins.
//! - Freed pages are returned at once rather than after mimalloc's default second: its purge
//!   runs only when the allocator is called, and an idle server calls it rarely, so a delay
//!   left a burst's memory resident long after it ended.

use libmimalloc_sys::{mi_option_set_default, mi_option_t};

/// mimalloc's options by their position in `mi_option_e` (mimalloc.h, v3); the sys crate
/// names only a few of them.
const MI_OPTION_PURGE_DELAY: mi_option_t = 15;
const MI_OPTION_ALLOW_THP: mi_option_t = 43;

/// Set from an ELF initializer, not from `main`: mimalloc reads the huge-page option when it
/// initializes (its own initializer) and reserves its first arena at the first allocation,
/// both before `main`; set later, the first arena kept its huge pages (3 MB of an idle
/// server). Initializers with a priority run before those without, and this one before
/// mimalloc's even when a clang build gives it priority 101.
#[used]
#[link_section = ".init_array.00100"]
static SET_DEFAULTS: extern "C" fn() = set_defaults;

extern "C" fn set_defaults() {
    // SAFETY: sets two integer defaults in mimalloc's static option table; nothing else runs
    // yet (no thread, no allocation).
    unsafe {
        mi_option_set_default(MI_OPTION_ALLOW_THP, 0);
        mi_option_set_default(MI_OPTION_PURGE_DELAY, 0);
    }
}

#[cfg(test)]
mod tests {
    use libmimalloc_sys::mi_option_get;

    use super::*;

    /// The options are named by number: a mimalloc whose enum moved would silently set others.
    /// The test binary has the same initializer and allocator as the server. THP off for the
    /// process shows that the number set is the option mimalloc acts on at its start.
    #[test]
    fn the_defaults_are_set_before_main() {
        // SAFETY: reads integer options.
        let (purge_delay, allow_thp) = unsafe {
            (
                mi_option_get(MI_OPTION_PURGE_DELAY),
                mi_option_get(MI_OPTION_ALLOW_THP),
            )
        };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(purge_delay, 0);
        }
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
            assert_eq!(allow_thp, 0);
            // mimalloc acted on it at its start.
            assert_eq!(nix::sys::prctl::get_thp_disable(), Ok(true));
        }
    }
}
