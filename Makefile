# relattn: two commands do all set-up on a fresh machine.
#   make serve   installs what is missing, builds the wasm, serves www/ and prints the URL
#   make test    installs what the tests need and runs every test
PORT ?= 8080
WASM_BINDGEN_VERSION = $(shell sed -n '/^name = "wasm-bindgen"$$/{n;s/version = "\(.*\)"/\1/p;}' Cargo.lock)
WASM = target/wasm32-unknown-unknown/release/relattn.wasm

.PHONY: serve wasm deps-wasm test test-rust

deps-wasm:
	@rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
	@cargo generate-lockfile --offline 2>/dev/null || test -f Cargo.lock
	@wasm-bindgen --version 2>/dev/null | grep -q " $(WASM_BINDGEN_VERSION)$$" || cargo install wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) --locked

wasm: deps-wasm
	cargo build --lib --target wasm32-unknown-unknown --release
	wasm-bindgen --target web --no-typescript --out-dir www/pkg $(WASM)

serve: wasm
	@echo "relattn is served at http://127.0.0.1:$(PORT)/  (Ctrl-C stops it)"
	python3 -m http.server $(PORT) --bind 127.0.0.1 --directory www

test: test-rust

test-rust:
	cargo test --all-targets
