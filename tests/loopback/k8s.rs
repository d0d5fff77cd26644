//! contrib/k8s: the manifests parse as YAML, carry what Kubernetes requires,
//! and pass wirespeed options its own parser accepts.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{peer, run};
use serde_json::Value;
use wirespeed::cli::iperf3::{Command, parse_args};
use wirespeed::config::Role;

const T: Duration = Duration::from_secs(30);

fn manifest(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/k8s").join(name)
}

/// Every YAML document of a file, through PyYAML, as JSON.
fn load(python: &PathBuf, name: &str) -> Vec<Value> {
    let code = "import json, sys, yaml\nprint(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))";
    let r = run(python, &["-c", code, manifest(name).to_str().unwrap()], T);
    assert_eq!(r.code, Some(0), "{name} is not valid YAML: {}", r.stderr);
    serde_json::from_str::<Vec<Value>>(&r.stdout).unwrap()
}

fn check_objects(docs: &[Value]) {
    for d in docs {
        assert!(d["apiVersion"].is_string(), "apiVersion: {d}");
        assert!(d["kind"].is_string(), "kind: {d}");
        assert!(d["metadata"]["name"].is_string(), "metadata.name: {d}");
    }
}

fn find<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
}

fn accepted(args: &[String]) -> wirespeed::config::TestConfig {
    match parse_args(args) {
        Ok(Command::Run(cfg, _)) => *cfg,
        other => panic!("wirespeed rejects {args:?}: {other:?}"),
    }
}

fn python() -> Option<PathBuf> {
    let p = peer("python3")?;
    let has_yaml = run(&p, &["-c", "import yaml"], T).code == Some(0);
    if !has_yaml {
        if std::env::var("WIRESPEED_REQUIRE_PEERS").as_deref() == Ok("1") {
            panic!("python3-yaml is required (WIRESPEED_REQUIRE_PEERS=1)");
        }
        eprintln!("NOTICE: PyYAML not installed; skipping the manifest checks");
        return None;
    }
    Some(p)
}

#[test]
fn server_daemonset_runs_a_metrics_server_per_node() {
    let Some(py) = python() else { return };
    let docs = load(&py, "wirespeed-server.yaml");
    check_objects(&docs);
    let ds = find(&docs, "DaemonSet");
    assert_eq!(ds["apiVersion"], "apps/v1");
    let sel = &ds["spec"]["selector"]["matchLabels"];
    let labels = &ds["spec"]["template"]["metadata"]["labels"];
    for (k, v) in sel.as_object().unwrap() {
        assert_eq!(&labels[k], v, "selector must match the pod labels");
    }
    let c = &ds["spec"]["template"]["spec"]["containers"][0];
    // The image packaging/build-image tags (it builds `wirespeed:<version>`
    // and tags it `wirespeed:latest`).
    let image = c["image"].as_str().unwrap();
    let script = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/build-image")).unwrap();
    assert!(
        script.contains(&format!("buildah tag \"wirespeed:$version\" {image}\n")),
        "packaging/build-image does not tag {image}"
    );
    // The mesh runs `kubectl exec <pod> -- wirespeed`: the image's PATH
    // must reach /wirespeed.
    assert!(script.contains("--env PATH=/ "), "the image's PATH");
    let args: Vec<String> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let cfg = accepted(&args);
    assert_eq!(cfg.role, Role::Server);
    let metrics = cfg.server.metrics.expect("--metrics in the server args");
    let mport: u64 = metrics.rsplit(':').next().unwrap().parse().unwrap();
    let ports = c["ports"].as_array().unwrap();
    let named = |n: &str| {
        ports
            .iter()
            .find(|p| p["name"] == n)
            .unwrap_or_else(|| panic!("port {n}"))
    };
    assert_eq!(named("metrics")["containerPort"], mport);
    assert_eq!(named("iperf3")["containerPort"], cfg.port as u64);
    for probe in ["readinessProbe", "livenessProbe"] {
        assert_eq!(c[probe]["httpGet"]["path"], "/metrics", "{probe}");
        assert_eq!(c[probe]["httpGet"]["port"], "metrics", "{probe}");
        // A 100m-CPU pod running a test answers slower than the default 1 s.
        let timeout = c[probe]["timeoutSeconds"].as_u64().unwrap_or(1);
        assert!(timeout >= 5, "{probe}: timeoutSeconds {timeout}");
    }
    assert_eq!(c["resources"]["requests"]["cpu"], "100m");
    let ann = &ds["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(ann["prometheus.io/port"], mport.to_string());
    let svc = find(&docs, "Service");
    assert_eq!(svc["spec"]["selector"], *sel);
}

#[test]
fn mesh_job_tests_every_pair_with_options_wirespeed_accepts() {
    let Some(py) = python() else { return };
    let docs = load(&py, "wirespeed-mesh.yaml");
    check_objects(&docs);
    let role = find(&docs, "Role");
    let rules = role["rules"].as_array().unwrap();
    assert!(
        rules
            .iter()
            .any(|r| r["resources"][0] == "pods/exec" && r["verbs"][0] == "create")
    );
    let cm = find(&docs, "ConfigMap");
    let client_args = cm["data"]["CLIENT_ARGS"].as_str().unwrap();
    let mut argv = vec!["-c".to_string(), "10.0.0.1".to_string()];
    argv.extend(client_args.split_whitespace().map(String::from));
    argv.push("-J".into());
    let cfg = accepted(&argv);
    assert!(cfg.output.json);
    let script = cm["data"]["mesh.sh"].as_str().unwrap();
    assert!(script.contains("wirespeed -c \"$ip_b\" $CLIENT_ARGS -J"));
    let file = std::env::temp_dir().join(format!("ws-mesh-{}.sh", std::process::id()));
    std::fs::write(&file, script).unwrap();
    let sh = run(&PathBuf::from("/bin/sh"), &["-n", file.to_str().unwrap()], T);
    let _ = std::fs::remove_file(&file);
    assert_eq!(sh.code, Some(0), "sh -n: {}", sh.stderr);
    let job = find(&docs, "Job");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(
        pod["serviceAccountName"],
        find(&docs, "ServiceAccount")["metadata"]["name"]
    );
    assert_eq!(pod["restartPolicy"], "Never");
    // A version tag, not `latest`.
    let image = pod["containers"][0]["image"].as_str().unwrap();
    let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or("");
    assert!(
        tag.starts_with('v')
            && tag[1..].split('.').count() == 3
            && tag[1..].split('.').all(|n| n.parse::<u32>().is_ok()),
        "the kubectl image is not pinned to a version: {image}"
    );
    assert_eq!(pod["volumes"][0]["configMap"]["name"], cm["metadata"]["name"]);
}

#[test]
fn mesh_script_collects_one_json_document_per_pair() {
    let Some(py) = python() else { return };
    let docs = load(&py, "wirespeed-mesh.yaml");
    let script = find(&docs, "ConfigMap")["data"]["mesh.sh"]
        .as_str()
        .unwrap()
        .to_string();
    // A stand-in kubectl: two "pods" on 127.0.0.1; exec runs the command here.
    let dir = std::env::temp_dir().join(format!("ws-mesh-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let kubectl = "#!/bin/sh\ncase \"$1\" in\n  get) printf 'pod-a,node-a,127.0.0.1\\npod-b,node-b,127.0.0.1\\n' ;;\n  exec) while [ \"$1\" != -- ]; do shift; done; shift; exec \"$@\" ;;\nesac\n";
    std::fs::write(dir.join("kubectl"), kubectl).unwrap();
    std::fs::write(dir.join("mesh.sh"), &script).unwrap();
    let ws = common::wirespeed();
    std::os::unix::fs::symlink(&ws, dir.join("wirespeed")).unwrap();
    let _ = run(
        &PathBuf::from("/bin/chmod"),
        &["+x", dir.join("kubectl").to_str().unwrap()],
        T,
    );
    let port = common::free_port();
    let _srv = common::wirespeed_server(port, &[]);
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new("/bin/sh")
        .arg(dir.join("mesh.sh"))
        .env("PATH", path)
        .env("NAMESPACE", "wirespeed")
        .env("CLIENT_ARGS", format!("-p {port} -t 1"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // `kubectl logs` mixes stdout and stderr: the log must be the array alone.
    assert!(
        out.stderr.is_empty(),
        "the mesh writes to stderr, which `kubectl logs > mesh.json` mixes in: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all: Value = serde_json::from_slice(&out.stdout).expect("one JSON array");
    let pairs = all.as_array().unwrap();
    assert_eq!(pairs.len(), 2, "two pods: two ordered pairs");
    assert_eq!(
        (pairs[0]["from"].as_str(), pairs[0]["to"].as_str()),
        (Some("node-a"), Some("node-b"))
    );
    for p in pairs {
        assert!(p["result"]["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0, "{p}");
    }
}
