//! Supply chain: what the build and the tests install is pinned to content, not to a
//! name that can move.
//! - Python tools (`scripts/tools/requirements.txt`, `scripts/requirements-build.txt`): every
//!   requirement `==`-pinned with at least one `--hash=sha256:` (scripts/lib.sh then installs with
//!   `--require-hashes`, so an unlisted dependency is refused too);
//! - no script upgrades pip from the index unpinned;
//! - every container image a workflow runs (`docker run`, `image:`, `uses: docker://`) carries an
//!   `@sha256:` digest: a tag such as `mongo:7` moves with every upstream rebuild.
//!
//! Plain file checks: no server, nothing to skip.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// Python requirements

/// Requirements (a line ending in `\` continues) that lack an exact pin or a sha256 hash.
fn unhashed_requirements(text: &str) -> Vec<String> {
    let mut joined = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.split(" #").next().unwrap_or("").trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        current.push_str(line.trim_end_matches('\\'));
        current.push(' ');
        if !line.ends_with('\\') {
            joined.push(std::mem::take(&mut current));
        }
    }
    joined
        .into_iter()
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .filter(|r| {
            let name = r.split_whitespace().next().unwrap_or("");
            let pinned = name.contains("==") && !name.contains('*');
            let hashes = r.split_whitespace().filter(|w| w.starts_with("--hash=sha256:")).collect::<Vec<_>>();
            let well_formed = hashes.iter().all(|h| {
                let hex = &h["--hash=sha256:".len()..];
                hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())
            });
            !(pinned && !hashes.is_empty() && well_formed)
        })
        .collect()
}

#[test]
fn every_python_tool_is_pinned_by_version_and_sha256() {
    for file in ["scripts/tools/requirements.txt", "scripts/requirements-build.txt"] {
        let text = read(&root().join(file));
        assert!(text.contains("--hash=sha256:"), "{file} has hashes");
        assert_eq!(unhashed_requirements(&text), Vec::<String>::new(), "{file}: requirements without a pin and a hash");
    }
}

#[test]
fn a_requirement_without_a_hash_or_an_exact_pin_is_caught() {
    let text = "# tools\nnx-27017==0.8.1\npymongo==4.20.1 \\\n    --hash=sha256:41464411366fabc8db70212f1a10cd7b5953eae6ee6a6500d9522f37f1a04311\nneosqlite>=1.17\n";
    assert_eq!(unhashed_requirements(text), vec!["nx-27017==0.8.1".to_owned(), "neosqlite>=1.17".to_owned()]);
    assert_eq!(
        unhashed_requirements("x==1 --hash=sha256:abc\n"),
        vec!["x==1 --hash=sha256:abc".to_owned()],
        "a short hash"
    );
}

#[test]
fn the_install_helper_requires_hashes_and_no_script_upgrades_pip_from_the_index() {
    let lib = read(&root().join("scripts/lib.sh"));
    assert!(lib.contains("--require-hashes"), "scripts/lib.sh installs hashed requirement files with --require-hashes");
    for entry in std::fs::read_dir(root().join("scripts")).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_file() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
            let upgrades_pip = line.contains("pip")
                && line.contains("install")
                && (line.contains("--upgrade pip") || line.contains("-U pip"));
            assert!(!upgrades_pip, "{}: an unpinned pip upgrade: {line}", path.display());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Container images of the workflows

/// `docker run` options that take a value (the image is the first argument that is neither an
/// option nor such a value).
const DOCKER_RUN_VALUE_OPTIONS: &[&str] = &[
    "--name",
    "-p",
    "--publish",
    "-e",
    "--env",
    "-v",
    "--volume",
    "--network",
    "--entrypoint",
    "-w",
    "--workdir",
    "-u",
    "--user",
    "--platform",
    "--mount",
    "-l",
    "--label",
    "--health-cmd",
    "--env-file",
    "-h",
    "--hostname",
];

/// The image references a workflow runs, with their line numbers.
fn workflow_images(yaml: &str) -> Vec<(usize, String)> {
    let mut images = Vec::new();
    for (n, line) in yaml.lines().enumerate() {
        let code = line.split(" #").next().unwrap_or("").trim();
        if code.starts_with('#') {
            continue;
        }
        if let Some(at) = code.find("docker run ") {
            let mut words = code[at + "docker run ".len()..].split_whitespace();
            while let Some(w) = words.next() {
                if DOCKER_RUN_VALUE_OPTIONS.contains(&w) {
                    words.next();
                } else if !w.starts_with('-') {
                    images.push((n + 1, w.to_owned()));
                    break;
                }
            }
        }
        let key_value = code.trim_start_matches("- ");
        if let Some(image) = key_value.strip_prefix("image:") {
            images.push((n + 1, image.trim().trim_matches(['"', '\'']).to_owned()));
        }
        if let Some(image) = key_value.strip_prefix("uses:").map(str::trim).and_then(|u| u.strip_prefix("docker://")) {
            images.push((n + 1, image.to_owned()));
        }
    }
    images
}

/// Pinned: `name[:tag]@sha256:<64 hex>`.
fn pinned_by_digest(image: &str) -> bool {
    image.split_once("@sha256:").is_some_and(|(name, hex)| {
        !name.is_empty() && hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    })
}

#[test]
fn every_workflow_image_is_pinned_by_digest() {
    let dir = root().join(".github/workflows");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.extension().is_some_and(|e| e == "yml" || e == "yaml") {
            continue;
        }
        for (line, image) in workflow_images(&read(&path)) {
            seen += 1;
            assert!(
                pinned_by_digest(&image),
                "{}:{line}: image {image:?} is not pinned by @sha256 digest",
                path.display()
            );
        }
    }
    assert!(seen >= 1, "the rust workflow runs MongoDB from an image: the scan must find it");
}

#[test]
fn a_tag_only_image_is_refused_in_every_form() {
    let workflow = r#"
jobs:
  test:
    services:
      redis:
        image: redis:7
    steps:
      - uses: docker://alpine:3.20
      - run: docker run -d --name mongo -p 27017:27017 mongo:7 --replSet rs0
      - run: docker run --rm -e X=1 ghcr.io/o/tool@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef --help
"#;
    let images = workflow_images(workflow);
    let names: Vec<&str> = images.iter().map(|(_, i)| i.as_str()).collect();
    assert_eq!(
        names,
        [
            "redis:7",
            "alpine:3.20",
            "mongo:7",
            "ghcr.io/o/tool@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        ]
    );
    let refused: Vec<&str> = names.iter().copied().filter(|i| !pinned_by_digest(i)).collect();
    assert_eq!(refused, ["redis:7", "alpine:3.20", "mongo:7"]);
    assert!(!pinned_by_digest("mongo:7@sha256:35a5"), "a short digest");
}
