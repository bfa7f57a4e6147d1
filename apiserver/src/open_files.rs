//! The process's open-file limit raised to the most it may be (the soft limit to the hard
//! one) at start, as Go programs do since Go 1.19, kube-apiserver among them: every watch and
//! kept-alive connection is a socket, and a soft limit of 1,024 would turn clients away while
//! the hard limit allows far more. Unlike Go, which restores the old limit for the programs
//! it starts, processes the server starts (CNI plugins) inherit the raised one.

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; the limit before and after, or None
/// when it already was the hard limit.
pub fn raise() -> std::io::Result<Option<(u64, u64)>> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the struct it is given, which lives across the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if limit.rlim_cur >= limit.rlim_max {
        return Ok(None);
    }
    let before = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: setrlimit reads only the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Some((before, limit.rlim_cur)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_soft_limit_ends_at_the_hard_one() {
        super::raise().expect("raise the open-file limit");
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: as in `raise`.
        assert_eq!(
            unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
            0
        );
        assert_eq!(limit.rlim_cur, limit.rlim_max);
        assert_eq!(
            super::raise().expect("again"),
            None,
            "nothing left to raise"
        );
    }
}
