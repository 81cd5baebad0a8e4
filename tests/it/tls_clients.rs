//! Every TLS client of the Lambda binaries, through ring, against real TLS servers (docs/performance.md, "Zip size": why ring).
//!
//! The zips use one crypto provider, ring (`sophia_platform::tls`). No local server speaks TLS,
//! so this puts a TLS terminator (tokio-rustls) in front of each: nx-27017 for the MongoDB driver
//! (`tls=true`, as Atlas URIs set it, with the test CA as `tlsCAFile`), fauxqs for the SQS client
//! (`https://` endpoint, roots from the system store: `SSL_CERT_FILE`), and the OpenAI fake for
//! reqwest (the platform verifier, also the system store). Each must complete a handshake that
//! verifies the server's certificate (issued per run by a test CA, for 127.0.0.1) and do its
//! work through it; each must refuse a server whose certificate another CA issued.
//!
//! `SSL_CERT_FILE` is process-wide and read when a client is built, so the test runs in a process
//! of its own: the test binary runs itself again for this one test, with the variable set on the
//! child only (the other tests of the binary keep the system store and see no variable change).

use crate::support::alone;
use crate::support::report as report_support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
use report_support::*;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sophia_local::servers::{free_port, start_nx_mongo};
use sophia_platform::mongo::MongoSettings;
use tokio::net::{TcpListener, TcpStream};

/// A certificate authority of this run and a server certificate it issued for 127.0.0.1.
struct Authority {
    ca_pem: String,
    server_chain: Vec<CertificateDer<'static>>,
    server_key: Vec<u8>,
}

impl Authority {
    fn new(name: &str) -> Self {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(rcgen::DnType::CommonName, format!("Sophia test CA {name}"));
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().expect("server key");
        let mut server = CertificateParams::new(vec!["localhost".to_owned()]).expect("server params");
        server.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().expect("an IP")));
        let cert = server.signed_by(&key, &issuer).expect("server certificate");
        Self {
            ca_pem: ca_cert.pem(),
            server_chain: vec![cert.der().clone(), ca_cert.der().clone()],
            server_key: key.serialize_der(),
        }
    }
}

/// A TLS terminator on 127.0.0.1 in front of a plain TCP backend; counts completed handshakes.
struct TlsFront {
    address: SocketAddr,
    handshakes: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl TlsFront {
    async fn start(authority: &Authority, backend: SocketAddr) -> Self {
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                authority.server_chain.clone(),
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(authority.server_key.clone())),
            )
            .expect("server certificate and key");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let address = listener.local_addr().expect("address");
        let handshakes = Arc::new(AtomicUsize::new(0));
        let counted = handshakes.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (acceptor, counted) = (acceptor.clone(), counted.clone());
                tokio::spawn(async move {
                    // A client that refuses the certificate ends the handshake here.
                    let Ok(mut tls) = acceptor.accept(client).await else { return };
                    counted.fetch_add(1, Ordering::SeqCst);
                    let Ok(mut plain) = TcpStream::connect(backend).await else { return };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Self { address, handshakes, task }
    }

    fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn write_temp(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("sophia-tls-{}-{name}", std::process::id()));
    std::fs::write(&path, text).expect("temp file");
    path
}

#[tokio::test]
async fn every_client_of_the_functions_speaks_tls_through_ring_and_refuses_an_unknown_issuer() {
    const TEST: &str = "every_client_of_the_functions_speaks_tls_through_ring_and_refuses_an_unknown_issuer";
    if !alone::is_alone(module_path!(), TEST) {
        let ca_file = write_temp("ca.pem", "");
        alone::run_alone(module_path!(), TEST, &[("SSL_CERT_FILE", ca_file.as_os_str())], &["refused "]);
        let _ = std::fs::remove_file(&ca_file);
        return;
    }
    let trusted = Authority::new("trusted");
    let stranger = Authority::new("stranger");
    // The system store of this process: the test CA only (read by rustls-native-certs, which the
    // SDK's connector and reqwest's platform verifier use on Linux). The parent set SSL_CERT_FILE
    // for this process; the CA is written there before any client exists.
    let ca_file = PathBuf::from(std::env::var_os("SSL_CERT_FILE").expect("set by the parent process"));
    std::fs::write(&ca_file, &trusted.ca_pem).expect("CA file");

    // MongoDB: the driver's rustls with ring, roots from tlsCAFile. An nx-27017 of this test's
    // own, whatever SOPHIA_TEST_MONGODB_URI says: the front needs one plain address behind it.
    let nx_server = start_nx_mongo(free_port()).expect("nx-27017 starts (run scripts/setup-tools)");
    let nx = loopback(nx_server.port());
    let mongo_front = TlsFront::start(&trusted, nx).await;
    let mongo_settings = |front: &TlsFront| MongoSettings {
        uri: format!("mongodb://{}/?tls=true&tlsCAFile={}&directConnection=true", front.address, ca_file.display()),
        database: harness::unique("tls"),
        server_selection_timeout: Duration::from_secs(5),
        allow_standalone: true,
    };
    let mongo = Mongo::connect(&mongo_settings(&mongo_front)).await.expect("a TLS connection to MongoDB");
    mongo.ping().await.expect("ping over TLS");
    let probes = mongo.db.collection::<Document>("probes");
    probes.insert_one(doc! {"over": "tls"}).await.expect("insert over TLS");
    assert_eq!(probes.find_one(doc! {}).await.unwrap().unwrap().get_str("over").unwrap(), "tls");
    assert!(mongo_front.handshakes() >= 1, "the driver went through the TLS front");

    let mongo_stranger = TlsFront::start(&stranger, nx).await;
    let refused = match Mongo::connect(&mongo_settings(&mongo_stranger)).await {
        Ok(m) => m.ping().await.expect_err("a certificate from another CA is refused").to_string(),
        Err(e) => e.to_string(),
    };
    assert!(refused.to_lowercase().contains("certificate"), "refused for its certificate: {refused}");
    assert_eq!(mongo_stranger.handshakes(), 0);

    // SQS: the functions' client (aws-smithy-http-client's rustls connector in ring mode).
    let fauxqs = loopback(harness::fauxqs().port());
    let sqs_front = TlsFront::start(&trusted, fauxqs).await;
    let sqs = sophia_platform::sqs::client(Some(&format!("https://{}", sqs_front.address))).expect("client");
    let queue = sqs.create_queue().queue_name(harness::unique("tls")).send().await.expect("CreateQueue over TLS");
    let url = queue.queue_url().expect("queue URL").to_owned();
    sqs.send_message().queue_url(&url).message_body("over tls").send().await.expect("SendMessage over TLS");
    let received = harness::drain(&harness::sqs_client().await, &url).await;
    assert_eq!(received.iter().filter_map(|m| m.body()).collect::<Vec<_>>(), ["over tls"]);
    assert!(sqs_front.handshakes() >= 1, "the SQS client went through the TLS front");

    let sqs_stranger = TlsFront::start(&stranger, fauxqs).await;
    let sqs = sophia_platform::sqs::client(Some(&format!("https://{}", sqs_stranger.address))).expect("client");
    let refused = sqs.list_queues().send().await.expect_err("a certificate from another CA is refused");
    let refused = format!("{:?}", aws_sdk_sqs::error::DisplayErrorContext(&refused));
    assert!(refused.to_lowercase().contains("certificate"), "refused for its certificate: {refused}");
    assert_eq!(sqs_stranger.handshakes(), 0);

    // OpenAI: reqwest with ring as the process default, through the whole report handler.
    let fake = FakeOpenAi::scripted().expect("fake starts");
    let openai_front = TlsFront::start(&trusted, fake.addr()).await;
    let handler = |front: &TlsFront| {
        let mut openai = settings(&fake, Duration::from_secs(10));
        openai.base_url = Some(format!("https://{}/v1", front.address));
        let service = ReportService::new(mongo.db.clone(), ReportModel::new(&openai));
        ReportGenerateHandler::with_service(mongo.clone(), service, ConsumerOptions::default())
    };
    let report = |interview: InterviewId| {
        let reports = mongo.db.collection::<Document>(INTERVIEW_REPORTS);
        async move { reports.find_one(doc! {"interviewId": interview.oid()}).await.unwrap().expect("report written") }
    };
    migrations::apply(&mongo.db).await.expect("reports migrations");
    let ids = InterviewFixture::new(org()).insert(&mongo.db).await.unwrap();
    fake.push(Behaviour::Report);
    let batch = handler(&openai_front).handle_with_report(event(&[ids])).await.expect("no batch error");
    assert_eq!(batch.outcomes[0].1, Outcome::Processed);
    assert_eq!(report(ids.0).await.get_str("status").unwrap(), "COMPLETED");
    assert_eq!(fake.requests().len(), 1, "the chat completion reached the fake through TLS");
    assert!(openai_front.handshakes() >= 1);

    let openai_stranger = TlsFront::start(&stranger, fake.addr()).await;
    let ids = InterviewFixture::new(org()).insert(&mongo.db).await.unwrap();
    let batch = handler(&openai_stranger).handle_with_report(event(&[ids])).await.expect("no batch error");
    assert_eq!(batch.outcomes[0].1, Outcome::Failed, "retried: SQS redelivers it");
    let failed = report(ids.0).await;
    assert_eq!(failed.get_str("status").unwrap(), "FAILED");
    println!("refused OpenAI endpoint recorded as: {:?} / {:?}", failed.get("errorKind"), failed.get("lastError"));
    assert_eq!(fake.requests().len(), 1, "nothing reached the fake past a refused certificate");
    assert_eq!(openai_stranger.handshakes(), 0);
    let _ = std::fs::remove_file(&ca_file);
}
