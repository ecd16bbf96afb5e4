fn main() -> std::process::ExitCode {
    reward_workbench::cli::main()
}
