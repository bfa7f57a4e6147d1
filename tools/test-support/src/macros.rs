/// Runs each named test on the embedded store (tests `embedded::<name>`) and on a real etcd
/// (`etcd::<name>`), each with a fresh harness of the given [`FromBackend`](crate::FromBackend)
/// type, which the test takes by reference:
///
/// ```ignore
/// test_support::both_backends!(crate::support::Harness; creates, deletes);
/// test_support::both_backends!(crate::support::Harness, worker_threads = 2; creates);
/// ```
///
/// The harness type is named from inside the generated modules, so by a path from the crate
/// root. A test file can call this once: the modules' names would clash.
#[macro_export]
macro_rules! both_backends {
    ($harness:ty; $($name:ident),* $(,)?) => {
        $crate::both_backends!($harness, worker_threads = 4; $($name),*);
    };
    ($harness:ty, worker_threads = $threads:literal; $($name:ident),* $(,)?) => {
        $crate::__backend_tests!(embedded, embedded, $harness, $threads; $($name),*);
        $crate::__backend_tests!(etcd, etcd, $harness, $threads; $($name),*);
    };
}

/// [`both_backends!`] on the embedded store alone (tests `embedded_only::<name>`).
#[macro_export]
macro_rules! embedded_only {
    ($harness:ty; $($name:ident),* $(,)?) => {
        $crate::__backend_tests!(embedded_only, embedded, $harness, 4; $($name),*);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __backend_tests {
    ($module:ident, $open:ident, $harness:ty, $threads:literal; $($name:ident),*) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = $threads)]
                async fn $name() {
                    let h = <$harness as $crate::FromBackend>::$open().await;
                    super::$name(&h).await;
                }
            )*
        }
    };
}
