//! The `wirespeed` binary: pick a personality from argv, run it, exit.

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    std::process::exit(wirespeed::run(args));
}
