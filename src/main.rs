fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(pi::cli::main())
}
