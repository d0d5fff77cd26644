//! Both command-line parsers fed arbitrary argument vectors (NUL-separated):
//! every outcome is a configuration or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let args: Vec<String> = text.split('\0').map(String::from).collect();
    let _ = wirespeed::cli::iperf3::parse_args(&args);
    let _ = wirespeed::cli::iperf2::parse_args_with_env(&args, &|_| None);
    for a in &args {
        let _ = wirespeed::units::parse_size_iperf3(a);
        let _ = wirespeed::units::parse_bitrate_iperf3(a);
        let _ = wirespeed::units::parse_iperf2(a);
        let _ = wirespeed::units::parse_int(a, true);
        let _ = wirespeed::units::parse_seconds(a);
    }
});
