fn main() {
    // Only the addon needs napi's link setup; plain `cargo test` of the kernel does not.
    if std::env::var_os("CARGO_FEATURE_NODE").is_some() {
        napi_build::setup();
    }
}
