fn main() {
    std::process::exit(missionboard::cli::main());
}
