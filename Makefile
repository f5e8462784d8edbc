# relattn: two commands do all set-up on a fresh machine.
#   make serve   installs what is missing, builds the wasm, serves www/ and prints the URL
#   make test    installs what the tests need and runs every test
#   make wheel   the Python package, whole (extension, widget, models), as target/wheels/relattn-*.whl for pip
#   make docs    the book (docs/, mdBook) into target/book, its links and every command it shows checked
#   make check   formatting, clippy with warnings as errors (native, wasm32, fuzz targets), the scripts' syntax, Python lint,
#                the page's protocol types current, its messages and its worker type-checked against them
PORT ?= 8080
WASM_BINDGEN_VERSION = $(shell sed -n '/^name = "wasm-bindgen"$$/{n;s/version = "\(.*\)"/\1/p;}' Cargo.lock)
WASM = $(or $(CARGO_TARGET_DIR),target)/wasm32-unknown-unknown/release/relattn_wasm.wasm
WASM_DEBUG = $(or $(CARGO_TARGET_DIR),target)/wasm32-unknown-unknown/debug/relattn_wasm.wasm
# Cargo features of the wasm build: none for make serve; the e2e tests need the test hooks (crates/relattn-wasm/Cargo.toml).
WASM_FEATURES ?=

.PHONY: check protocol serve wasm vendor widget package-files wheel docs cli deps-wasm deps-web deps-gpu deps-python deps-hf4 test test-rust test-python test-web test-wasm test-e2e train fixtures

deps-wasm:
	@rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
	@test -f Cargo.lock || cargo generate-lockfile
	@wasm-bindgen --version 2>/dev/null | grep -q " $(WASM_BINDGEN_VERSION)$$" || cargo install wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) --locked \
	  || cargo install wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION)

# KaTeX (package.json) for the page's formulas, served from www/vendor/katex/ (git-ignored): no CDN.
vendor:
	@test -f node_modules/katex/dist/katex.min.js -a node_modules/.package-lock.json -nt package-lock.json || npm ci --no-audit --no-fund
	@mkdir -p www/vendor/katex
	@cp -u node_modules/katex/dist/katex.min.js node_modules/katex/dist/katex.min.css www/vendor/katex/
	@cp -ru node_modules/katex/dist/fonts www/vendor/katex/

# The page's Model mode fetches the trained models and the test pieces from www/models/ (git-ignored).
wasm: deps-wasm vendor
	cargo build -p relattn-wasm --lib --target wasm32-unknown-unknown --release $(WASM_FEATURES)
	wasm-bindgen --target web --no-typescript --out-name relattn --out-dir www/pkg $(WASM)
	@mkdir -p www/models && cp -u models/chorales-*.safetensors models/chorales-test.json www/models/

serve: wasm
	@echo "relattn is served at http://127.0.0.1:$(PORT)/  (Ctrl-C stops it)"
	python3 -m http.server $(PORT) --bind 127.0.0.1 --directory www

# In this order: the native build first (the book, Python and the e2e tests run its CLI), the Python tests before
# the browser's (tests/e2e/notebook.test.mjs runs the package they install).
test: test-rust docs test-python test-web

# The gate CI runs before the tests (eframe_template's check.sh): rustfmt (rustfmt.toml), clippy with warnings
# as errors on every native target and on the wasm32 library, each with and without the test hooks, and on
# the fuzz targets (their own crate, fuzz/); node's syntax check of every script and the page's modules on floors
# (tests/e2e/layout.test.mjs: no import back up, no cycle; no browser needed); ruff's pyflakes rules (F)
# on the offline Python of train/ and bench/ (static: neither torch nor music21 is needed).
check:
	@rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
	cargo fmt --check  # every workspace member, the Python crate included
	rustfmt --check --edition 2021 fuzz/fuzz_targets/*.rs
	cargo clippy -p relattn-core --all-targets -- -D warnings  # the math crate alone, no features: what a `cargo add` gets
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --features relattn/test-hooks -- -D warnings
	cargo clippy -p relattn-core -p relattn -p relattn-wasm --lib --target wasm32-unknown-unknown -- -D warnings
	cargo clippy -p relattn-wasm --target wasm32-unknown-unknown --features test-hooks --lib --test web --test web_model -- -D warnings
	cargo clippy --manifest-path fuzz/Cargo.toml --bins --target-dir target/fuzz -- -D warnings
	cargo clippy -p relattn-python --all-targets -- -D warnings
	@for f in www/*.js $$(find www/js -name '*.js') tests/e2e/*.mjs bench/*.mjs scripts/*.mjs python/relattn/*.js; do node --check "$$f" || exit 1; done
	node --test --test-reporter=dot tests/e2e/layout.test.mjs
	@python3 -m ruff --version >/dev/null 2>&1 || python3 -m pip install --quiet ruff
	python3 -m ruff check --select F --no-cache train bench python
	@test -d node_modules/typescript -a node_modules/.package-lock.json -nt package-lock.json || npm ci --no-audit --no-fund
	@rm -rf target/protocol-types
	TS_RS_EXPORT_DIR=$(CURDIR)/target/protocol-types cargo test --quiet -p relattn --lib --features test-hooks export_bindings >/dev/null
	@diff -r target/protocol-types www/js/types >/dev/null || { echo "www/js/types/ is not what crates/relattn/src/protocol/ generates: run make protocol"; exit 1; }
	node_modules/.bin/tsc -p tsconfig.json
	@# The worker against the wasm's exports: their wasm-bindgen types, from a debug build, beside a copy of the worker.
	@$(MAKE) --no-print-directory deps-wasm
	cargo build --quiet -p relattn-wasm --lib --target wasm32-unknown-unknown --features test-hooks
	@rm -rf target/check-www && mkdir -p target/check-www && cp -r www/worker.js www/js target/check-www/
	wasm-bindgen --target web --out-name relattn --out-dir target/check-www/pkg $(WASM_DEBUG)
	node_modules/.bin/tsc -p tsconfig.worker.json
	@echo "check: fmt, clippy (native, wasm32, with and without test hooks; the fuzz targets), scripts, Python, the protocol's types, the page's messages and the worker OK"

# The page's JavaScript types of the page ⇄ worker protocol, generated from crates/relattn/src/protocol/ (and the
# relattn-core types it carries, feature "ts") by ts-rs (each type's
# export_bindings test) into www/js/types/protocol.d.ts; make check fails when they are not current.
protocol:
	rm -rf www/js/types
	TS_RS_EXPORT_DIR=$(CURDIR)/www/js/types cargo test --quiet -p relattn --lib --features test-hooks export_bindings >/dev/null

# The book: docs/src/*.md (SUMMARY.md lists the chapters) built by mdBook into target/book (docs/book.toml), then
# scripts/check_docs.py: every link, image and #anchor of README.md and the book resolves, SUMMARY.md lists every
# chapter, and every `$ relattn …` line of a console block runs (with the debug CLI, in a temporary directory) and
# exits 0. mdbook is installed if missing, without its serve and watch features (a smaller build).
MDBOOK_VERSION = 0.5.4
docs: cli
	@mdbook --version 2>/dev/null | grep -qx "mdbook v$(MDBOOK_VERSION)" || cargo install mdbook --locked --no-default-features --features search --version $(MDBOOK_VERSION)
	mdbook build docs
	RELATTN_BIN=$(abspath $(or $(CARGO_TARGET_DIR),target))/debug/relattn python3 scripts/check_docs.py

# Mesa's software Vulkan (lavapipe), so tests/gpu.rs has an adapter on a machine without a GPU.
deps-gpu:
	@test -f /usr/share/vulkan/icd.d/lvp_icd.x86_64.json || (apt-get update && apt-get install -y mesa-vulkan-drivers)

# One native debug build serves every native test: cargo test's, and the CLI that the book's commands, Python's
# tests and the e2e tests run (built with the same flags, so `make cli` after `make test-rust` builds nothing).
NATIVE_TEST_BUILD = --all-targets --features relattn/test-hooks
cli:
	cargo build $(NATIVE_TEST_BUILD)

test-rust: deps-gpu
	cargo test $(NATIVE_TEST_BUILD)

# --- the Python package (python/) ------------------------------------------------------------------
# make wheel, the one command for Python users: target/wheels/relattn-*.whl, the crate's extension built by maturin
# (abi3, in a small virtual environment of its own, target/wheelvenv), with what the package carries brought in by
# this target (into python/relattn/static and python/relattn/models, git-ignored): the page's wasm and glue for the
# notebook widget (a release build without the test hooks), the widget's bundle and the trained chorale models.
# The tests install the same package built in the debug profile (test-python) in a virtual environment of their own (target/pyvenv: maturin, numpy, pytest,
# anywidget, jupyterlab, and torch and transformers for relattn.capture's tests: about 6 GB); pytest checks it
# against the command line's .npz and the transformers models; tests/e2e/notebook.test.mjs runs examples/ in JupyterLab.
PYVENV = target/pyvenv
WHEEL_VENV = target/wheelvenv
WHEEL_WWW = target/wheel-www
deps-python:
	@test -x $(PYVENV)/bin/python || python3 -m venv $(PYVENV)
	@# JupyterLab runs its bundled yarn.js with node, which would take this repository's package.json
	@# ("type": "module") for that file's: the venv says its own scripts are CommonJS.
	@echo '{ "type": "commonjs" }' > $(PYVENV)/package.json
	@$(PYVENV)/bin/python -c "import maturin, numpy, pytest, anywidget, jupyterlab, torch, transformers" 2>/dev/null || $(PYVENV)/bin/pip install --quiet --no-cache-dir -r python/requirements-test.txt

# The notebook widget: python/relattn/widget.js with the page's figure core (www/js/shared/figure-core.js)
# bundled in by esbuild (package.json) into one module, python/relattn/static/widget.js (git-ignored): one copy.
widget: vendor
	@mkdir -p python/relattn/static
	node_modules/.bin/esbuild python/relattn/widget.js --bundle --format=esm --log-level=warning --outfile=python/relattn/static/widget.js

# What the package carries besides its extension: the page's wasm and glue for the notebook widget (a release build
# without the test hooks), the widget's bundle and the trained chorale models.
package-files: deps-wasm widget
	cargo build -p relattn-wasm --lib --target wasm32-unknown-unknown --release
	wasm-bindgen --target web --no-typescript --out-name relattn --out-dir $(WHEEL_WWW) $(WASM)
	@mkdir -p python/relattn/static python/relattn/models
	cp $(WHEEL_WWW)/relattn.js $(WHEEL_WWW)/relattn_bg.wasm python/relattn/static/
	cp models/chorales-*.safetensors models/chorales-test.json python/relattn/models/

wheel: package-files
	@test -x $(WHEEL_VENV)/bin/maturin || { python3 -m venv $(WHEEL_VENV) && $(WHEEL_VENV)/bin/pip install --quiet maturin==1.16.0; }
	@rm -f target/wheels/relattn-*.whl
	$(WHEEL_VENV)/bin/maturin build --release -m python/Cargo.toml -o target/wheels
	@echo "Built $$(ls target/wheels/relattn-*.whl). Install it with: pip install '$$(ls target/wheels/relattn-*.whl)[notebook]'"

# The tests' package: make wheel's files and maturin build, but the extension in the debug profile in the
# workspace's target/, beside cargo test's build (its dependencies shared where their features agree), instead of
# a release build of every crate.
# transformers 4.x apart (python/requirements-hf4.txt), for the tests of BERT's relative positions against its own
# BertSelfAttention: about 135 MB, made again when the list changes.
HF4 = target/hf4
deps-hf4: deps-python
	@test $(HF4)/.installed -nt python/requirements-hf4.txt || { rm -rf $(HF4) && $(PYVENV)/bin/pip install --quiet --no-cache-dir --no-deps --target $(HF4) -r python/requirements-hf4.txt && touch $(HF4)/.installed; }

test-python: deps-python deps-hf4 package-files cli
	@rm -rf target/test-wheels
	$(PYVENV)/bin/maturin build -m python/Cargo.toml -o target/test-wheels
	$(PYVENV)/bin/pip install --quiet --force-reinstall --no-deps target/test-wheels/relattn-*-cp39-abi3-*.whl
	cd target && RELATTN_BIN=$(CURDIR)/target/debug/relattn $(CURDIR)/$(PYVENV)/bin/python -m pytest -q $(CURDIR)/python/tests

# --- browser tests ---------------------------------------------------------------------------------
# Debian's chromium and chromedriver (never a downloaded browser), playwright-core from package-lock.json.
# Chromium's flags (headless, no sandbox, no network chatter, fresh profile) are in webdriver.json and
# tests/e2e/page.test.mjs.

deps-web: deps-wasm
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || { apt-get update && apt-get install -y chromium chromium-driver; }
	@test -d node_modules/playwright-core -a node_modules/.package-lock.json -nt package-lock.json || npm ci --no-audit --no-fund

# wasm-bindgen-test of the wasm API (crates/relattn-wasm/tests/: web.rs, web_model.rs) in headless chromium (flags in
# webdriver.json). The trained models take about 30 s in this debug build, past the runner's default limit of 20 s.
# chromedriver leaves each browser's profile (about 50 MB) in the temporary folder: TMPDIR is one of target/'s,
# emptied after the run whatever its result.
WASM_TEST_TMP = target/wasm-test-tmp
test-wasm: deps-web
	@rm -rf $(WASM_TEST_TMP) && mkdir -p $(WASM_TEST_TMP)
	TMPDIR=$(abspath $(WASM_TEST_TMP)) CHROMEDRIVER=/usr/bin/chromedriver CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner WASM_BINDGEN_TEST_TIMEOUT=120 \
	  cargo test -p relattn-wasm --target wasm32-unknown-unknown --features test-hooks --test web --test web_model; \
	  status=$$?; rm -rf $(WASM_TEST_TMP); exit $$status

# The page end to end: serves www/ on 127.0.0.1, drives chromium; screenshots in tests/e2e/artifacts/.
# The wasm is built with the test hooks (the worker's debug messages call them).
test-e2e: WASM_FEATURES = --features test-hooks
test-e2e: deps-web wasm
	node --test --test-concurrency=1 tests/e2e/

test-web: test-wasm test-e2e

# --- trained models ------------------------------------------------------------------------------
# Rebuilds models/, tests/fixtures/chorales-* and docs/src/img/models-*.png from music21's Bach chorales with PyTorch
# in a virtual environment of its own (train/.venv, about 4 GB): six schemes × three seeds, one run after
# another, each about 35 minutes on 2 cores, resumable (stopped, it continues from the checkpoints in
# train/runs/; finished runs' figures and weights in train/results/ are kept and committed); then the music figures of the shipped models
# (models/music_figures.json) and docs/src/models.md's tables on stdout. Offline work: make test never needs it.
train:
	@test -x train/.venv/bin/python || python3 -m venv train/.venv
	train/.venv/bin/pip install --quiet --no-cache-dir -r train/requirements.txt
	train/run_all.sh
	cargo build --release --quiet
	python3 train/music_figures.py
	python3 train/tables.py

# Fixtures from the reference implementations (Hugging Face transformers' position functions, the seed
# notebook's PyTorch module), written offline in train/.venv with transformers added: make test reads them.
fixtures:
	@test -x train/.venv/bin/python || python3 -m venv train/.venv
	train/.venv/bin/pip install --quiet --no-cache-dir -r train/requirements.txt transformers==5.24.0
	train/.venv/bin/python train/position_fixtures.py
	train/.venv/bin/python python/tests/make_seed_fixture.py
