#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| request_fuzz::patch::run(data));
