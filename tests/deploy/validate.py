"""Checks the manifests in deploy/ (tests/e2e/deploy.rs runs this).

- Kubernetes' own kinds (ConfigMap, Job, NetworkPolicy) against the
  published JSON schemas of Kubernetes 1.33, strictly (an unknown field is
  an error), with kubernetes-validate.
- agent-sandbox's kinds: no schema package of theirs installs here, so the
  Kubernetes types they embed are checked against the same schemas (the
  pod template as a PodTemplateSpec, the network policy as a
  NetworkPolicySpec), and their own fields against the names and values
  of agent-sandbox's v1beta1 CRDs, written out below.
- The two network policies describe one boundary, the one carapace's
  egress proxy works within: DNS, the transcript store, HTTPS outside the
  cluster; the cluster's ranges and the metadata service shut; and no
  domain the job allows is one the policy would shut.

    python3 tests/deploy/validate.py DEPLOY_DIR JOB_OUT

writes the Job's job.json to JOB_OUT (for `carapace worker --check`).
Exits 1 with every failure listed.
"""

import ipaddress
import json
import sys
from pathlib import Path

import kubernetes_validate
import yaml

KUBERNETES = "1.33.0"

# agent-sandbox v1beta1 (extensions.agents.x-k8s.io): each kind's spec
# fields, and the values of those that are enums.
SANDBOX_SPECS = {
    "SandboxTemplate": {
        "fields": {"envVarsInjectionPolicy", "generatedSecrets", "networkPolicy",
                   "networkPolicyManagement", "podTemplate", "service",
                   "volumeClaimTemplates", "volumeClaimTemplatesPolicy"},
        "required": {"podTemplate"},
        "enums": {"envVarsInjectionPolicy": {"Allowed", "Overrides", "Disallowed"},
                  "networkPolicyManagement": {"Managed", "Unmanaged"}},
    },
    "SandboxWarmPool": {
        "fields": {"replicas", "sandboxTemplateRef", "updateStrategy"},
        "required": {"sandboxTemplateRef"},
        "enums": {},
    },
    "SandboxClaim": {
        "fields": {"additionalPodMetadata", "env", "lifecycle", "volumeClaimTemplates",
                   "warmPoolRef", "sandboxTemplateRef", "warmpool"},
        "required": set(),
        "enums": {},
    },
}
SANDBOX_API = "extensions.agents.x-k8s.io/v1beta1"

# What the policies must shut: the cluster's private ranges, CGNAT,
# link-local (the cloud's metadata service) and loopback.
SHUT = {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10",
        "169.254.0.0/16", "127.0.0.0/8"}


def documents(deploy):
    for path in sorted(deploy.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                yield path.relative_to(deploy), doc


def validate_kubernetes(doc):
    return kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def check_sandbox_kind(doc, failures, where):
    spec_shape = SANDBOX_SPECS.get(doc["kind"])
    if spec_shape is None or doc.get("apiVersion") != SANDBOX_API:
        failures.append(f"{where}: {doc.get('apiVersion')} {doc['kind']} is not an agent-sandbox v1beta1 kind")
        return
    spec = doc.get("spec", {})
    for field in set(spec) - spec_shape["fields"]:
        failures.append(f"{where}: spec.{field} is not a field of {doc['kind']}")
    for field in spec_shape["required"] - set(spec):
        failures.append(f"{where}: spec.{field} is required")
    for field, values in spec_shape["enums"].items():
        if field in spec and spec[field] not in values:
            failures.append(f"{where}: spec.{field} is not one of {sorted(values)}")
    if "podTemplate" in spec:
        as_pod_template = {"apiVersion": "v1", "kind": "PodTemplate",
                           "metadata": {"name": "embedded"}, "template": spec["podTemplate"]}
        check(validate_kubernetes, as_pod_template, failures, f"{where} podTemplate")
    if "networkPolicy" in spec:
        as_policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                     "metadata": {"name": "embedded"},
                     "spec": {"podSelector": {}, **spec["networkPolicy"]}}
        check(validate_kubernetes, as_policy, failures, f"{where} networkPolicy")


def check(validator, doc, failures, where):
    try:
        validator(doc)
    except kubernetes_validate.ValidationError as e:
        failures.append(f"{where}: {'.'.join(str(p) for p in e.path)}: {e.message}")
    except Exception as e:  # a schema that cannot be found is a failure too
        failures.append(f"{where}: {e}")


def egress_boundary(egress):
    """The rules as (what, ports) pairs: kube-dns, the store, or a CIDR with its exceptions."""
    seen = set()
    for rule in egress:
        ports = frozenset((p.get("protocol", "TCP"), p["port"]) for p in rule.get("ports", []))
        for peer in rule.get("to", []) or [{}]:
            if "ipBlock" in peer:
                what = ("cidr", peer["ipBlock"]["cidr"], frozenset(peer["ipBlock"].get("except", [])))
            else:
                what = ("selector", json.dumps(peer, sort_keys=True))
            seen.add((what, ports))
    return seen


def check_boundary(policies, allowed_domains, failures):
    boundaries = {name: egress_boundary(egress) for name, egress in policies.items()}
    if len({frozenset(b) for b in boundaries.values()}) > 1:
        failures.append(f"the network policies differ: {sorted(boundaries)}")
    for name, boundary in boundaries.items():
        ports = {port for _, rule_ports in boundary for port in rule_ports}
        if ports != {("UDP", 53), ("TCP", 53), ("TCP", 5432), ("TCP", 443)}:
            failures.append(f"{name}: egress ports {sorted(ports)}, not DNS, the store and HTTPS")
        for what, rule_ports in boundary:
            if what[0] == "cidr" and not SHUT <= what[2]:
                failures.append(f"{name}: {what[1]} leaves open {sorted(SHUT - what[2])}")
            if what[0] == "cidr" and rule_ports != {("TCP", 443)}:
                failures.append(f"{name}: {what[1]} is open on more than HTTPS")
    for domain in allowed_domains:
        host = domain.lstrip("*.")
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
        internal = (address is not None and not address.is_global) or host == "localhost" \
            or host.endswith((".local", ".svc", ".internal", ".cluster.local"))
        if internal:
            failures.append(f"the job allows {domain}, which the network policy shuts")


def main(deploy, job_out):
    failures = []
    policies, allowed = {}, []
    for where, doc in documents(deploy):
        name = f"{where} {doc['kind']}/{doc['metadata']['name']}"
        if doc["kind"].startswith("Sandbox"):
            check_sandbox_kind(doc, failures, name)
            if "networkPolicy" in doc.get("spec", {}):
                policies[name] = doc["spec"]["networkPolicy"].get("egress", [])
            continue
        check(validate_kubernetes, doc, failures, name)
        if doc["kind"] == "NetworkPolicy":
            policies[name] = doc["spec"].get("egress", [])
        if doc["kind"] == "ConfigMap" and "job.json" in doc.get("data", {}):
            job = json.loads(doc["data"]["job.json"])
            allowed += job.get("settings", {}).get("sandbox", {}).get("network", {}).get("allowedDomains", [])
            Path(job_out).write_text(doc["data"]["job.json"])
    if len(policies) < 2:
        failures.append(f"expected the Job's and the template's network policies, found {sorted(policies)}")
    check_boundary(policies, allowed, failures)
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2]))
