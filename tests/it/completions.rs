//! The committed completion files in `completions/` are exactly what the clap
//! definition generates; regenerate with `scripts/update-completions.sh`.

use clap_complete::Shell;

#[test]
fn completion_files_are_current() {
    for (shell, file) in [
        (Shell::Bash, "completions/seckill.bash"),
        (Shell::Zsh, "completions/_seckill"),
        (Shell::Fish, "completions/seckill.fish"),
    ] {
        let mut generated = Vec::new();
        seckill::cmd::completions::write(shell, seckill::cli::definition(), &mut generated);
        let committed = std::fs::read(file).unwrap_or_default();
        assert!(
            committed == generated,
            "{file} is stale: run scripts/update-completions.sh and commit the result"
        );
        let text = String::from_utf8(generated).unwrap();
        assert!(text.contains("shutdown-switch") && text.contains("preheat"));
    }
}
