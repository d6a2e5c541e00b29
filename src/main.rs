fn main() {
    // The unit supervisor starts before anything else: no store, no logging, one
    // thread (see `missionboard::supervise`).
    let mut argv = std::env::args_os().skip(1);
    if argv
        .next()
        .is_some_and(|a| a == missionboard::supervise::SUBCOMMAND)
    {
        let rest: Vec<_> = argv.collect();
        std::process::exit(missionboard::supervise::main(&rest));
    }
    std::process::exit(missionboard::cli::main());
}
