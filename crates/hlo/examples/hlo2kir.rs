//! Prints what Kiln makes of an HLO file: `cargo run -p kiln-hlo --example hlo2kir -- f.hlo`.
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: hlo2kir FILE.hlo");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    match kiln_hlo::import(&text, &path) {
        Ok(m) => print!("{}", kiln_ir::print_module(&m)),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
