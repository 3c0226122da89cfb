"""``openclaw-dask certs create`` and the checks of configured TLS files (no cluster)."""

from __future__ import annotations

import ipaddress
import socket
import ssl
import stat
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from openclaw_dask.cli.main import cli
from openclaw_dask.config import ConfigError, load_config
from openclaw_dask.config.tls import create_certificates, max_days


def tls_sets(ca: Path | str, cert: Path | str, key: Path | str) -> list[str]:
    return [
        "distributed.communication_backend=tls",
        f"distributed.tls.ca_file={ca}",
        f"distributed.tls.cert={cert}",
        f"distributed.tls.key={key}",
    ]


def problems_of(sets: list[str]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(None, sets, use_search_path=False)
    return [str(p) for p in info.value.problems]


def test_ca_and_node_certificate_for_mutual_tls(tmp_path: Path) -> None:
    made = create_certificates(tmp_path / "certs", ["node", "w1"], ["10.0.0.5", "n1.example"])
    assert not made.ca_reused and [n.name for n in made.nodes] == ["node", "w1"]
    ca = x509.load_pem_x509_certificate(made.ca_file.read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for node in made.nodes:
        cert = x509.load_pem_x509_certificate(node.cert.read_bytes())
        cert.verify_directly_issued_by(ca)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = set(san.get_values_for_type(x509.DNSName))
        ips = set(san.get_values_for_type(x509.IPAddress))
        assert {"localhost", socket.gethostname(), "n1.example"} <= names
        assert {ipaddress.ip_address(a) for a in ("127.0.0.1", "::1", "10.0.0.5")} <= ips
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH} <= set(usage)
        assert stat.S_IMODE(node.key.stat().st_mode) == 0o600
        # what distributed does with them: a context that loads the pair and trusts the CA
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(made.ca_file))
        ctx.load_cert_chain(str(node.cert), str(node.key))
    assert stat.S_IMODE(made.ca_key.stat().st_mode) == 0o600
    assert load_config(None, tls_sets(made.ca_file, made.nodes[1].cert, made.nodes[1].key))


def test_ca_is_reused_and_node_files_are_not_overwritten(tmp_path: Path) -> None:
    first = create_certificates(tmp_path)
    ca_bytes, node_bytes = first.ca_file.read_bytes(), first.nodes[0].cert.read_bytes()
    with pytest.raises(FileExistsError, match="--force"):
        create_certificates(tmp_path)
    again = create_certificates(tmp_path, overwrite=True)
    assert again.ca_reused and again.ca_file.read_bytes() == ca_bytes
    assert again.nodes[0].cert.read_bytes() != node_bytes
    (tmp_path / "ca-key.pem").unlink()
    with pytest.raises(ValueError, match="half a CA"):
        create_certificates(tmp_path, ["other"])


def test_cli_prints_config_lines_that_load(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["certs", "create", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    text = result.output.split("one node pair per machine):\n", 1)[1]
    config = tmp_path / "openclaw.config"
    config.write_text(text)
    values = yaml.safe_load(text)["distributed"]
    assert values["communication_backend"] == "tls"
    assert values["tls"]["ca_file"] == str((tmp_path / "c" / "ca.pem").resolve())
    assert load_config(config)["distributed.tls.key"].endswith("node-key.pem")
    again = CliRunner().invoke(cli, ["certs", "create", str(tmp_path / "c")])
    assert again.exit_code == 2 and "exists (pass --force" in again.output


def test_bad_tls_files_are_named_by_key(tmp_path: Path) -> None:
    good = create_certificates(tmp_path / "a")
    other = create_certificates(tmp_path / "b")
    node = good.nodes[0]
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")

    missing = problems_of(tls_sets(tmp_path / "nope.pem", node.cert, node.key))
    assert missing == [f"--set: distributed.tls.ca_file: file not found: {tmp_path}/nope.pem"]
    not_pem = problems_of(tls_sets(good.ca_file, junk, junk))
    assert f"--set: distributed.tls.cert: {junk} is not a PEM certificate" in not_pem
    assert f"--set: distributed.tls.key: {junk} is not a PEM private key" in not_pem
    wrong_key = problems_of(tls_sets(good.ca_file, node.cert, other.nodes[0].key))
    assert wrong_key == [
        f"--set: distributed.tls.key: {other.nodes[0].key} is not the key of {node.cert}"
    ]
    wrong_ca = problems_of(tls_sets(other.ca_file, node.cert, node.key))
    assert len(wrong_ca) == 1 and "distributed.tls.cert" in wrong_ca[0]
    assert f"was not issued by the CA {other.ca_file}" in wrong_ca[0]
    # one problem where tls was chosen (unset keys have no line of their own), naming all three
    unset = problems_of(["distributed.communication_backend=grpc"])
    assert unset == [
        "--set: distributed.communication_backend: grpc (tls) needs distributed.tls.ca_file, "
        "distributed.tls.cert and distributed.tls.key set (PEM files); make them with "
        "`openclaw-dask certs create DIR`"
    ]


def test_days_past_year_9999_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    target = tmp_path / "d"
    result = CliRunner().invoke(cli, ["certs", "create", str(target), "--days", "3000000"])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--days': expected 1 to " in result.output
    assert "Traceback" not in result.output and not target.exists()
    with pytest.raises(ValueError, match="certificates end by 9999-12-31"):
        create_certificates(target, days=3_000_000)
    assert not target.exists()
    # the longest validity that fits is accepted
    made = create_certificates(target, days=max_days())
    cert = x509.load_pem_x509_certificate(made.nodes[0].cert.read_bytes())
    assert cert.not_valid_after_utc.year == 9999
    ca = x509.load_pem_x509_certificate(made.ca_file.read_bytes())
    assert ca.not_valid_after_utc >= cert.not_valid_after_utc  # a new CA covers its nodes


def test_a_node_never_outlives_a_reused_ca(tmp_path: Path) -> None:
    made = create_certificates(tmp_path, days=30)
    ca = x509.load_pem_x509_certificate(made.ca_file.read_bytes())
    left = (ca.not_valid_after_utc - ca.not_valid_before_utc).days  # 3650 days, 5 min early
    result = CliRunner().invoke(
        cli, ["certs", "create", str(tmp_path), "--name", "w1", "--days", str(left + 5)]
    )
    assert result.exit_code == 2, result.output
    assert f"--days {left + 5}: a node certificate cannot outlive its CA ({made.ca_file} " in (
        " ".join(result.output.split())
    )
    assert f"give --days {left - 1} or less" in " ".join(result.output.split())
    assert not (tmp_path / "w1.pem").exists() and "Traceback" not in result.output
    assert create_certificates(tmp_path, ["w1"], days=left - 1).ca_reused


def test_an_expired_ca_signs_no_new_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datetime as dt

    from openclaw_dask.config import tls

    made = create_certificates(tmp_path, days=30)
    later = tls._now() + dt.timedelta(days=4000)
    monkeypatch.setattr(tls, "_now", lambda: later)
    with pytest.raises(ValueError, match=r"expired on \d{4}-\d\d-\d\d .* move ca.pem"):
        create_certificates(tmp_path, ["w2"])
    assert not (tmp_path / "w2.pem").exists() and made.ca_file.exists()


@pytest.mark.parametrize("host", ["not a host!!", "exa mple.com", "-bad", "::::1", ""])
def test_bad_hosts_are_refused(tmp_path: Path, host: str) -> None:
    target = tmp_path / "d"
    result = CliRunner().invoke(cli, ["certs", "create", str(target), f"--host={host}"])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '--host': expected a host name or IP address, got {host!r}" in (
        result.output
    )
    assert not target.exists()
    with pytest.raises(ValueError, match="expected a host name or IP address"):
        create_certificates(target, hosts=[host])
    assert not target.exists()


def test_bracketed_ipv6_host_becomes_an_ip_address(tmp_path: Path) -> None:
    made = create_certificates(tmp_path, hosts=["[fd00::5]"])
    cert = x509.load_pem_x509_certificate(made.nodes[0].cert.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("fd00::5") in san.get_values_for_type(x509.IPAddress)
    assert "[fd00::5]" not in san.get_values_for_type(x509.DNSName)


def test_a_failed_write_leaves_no_files(tmp_path: Path) -> None:
    # a directory where a node key goes: writing the set fails after the CA was made in memory
    target = tmp_path / "d"
    (target / "node-key.pem").mkdir(parents=True)
    with pytest.raises(OSError):
        create_certificates(target, overwrite=True)
    assert sorted(p.name for p in target.iterdir()) == ["node-key.pem"]


def _break_ca(folder: Path, how: str, other: Path) -> str:
    """Damage the CA in ``folder`` as ``how`` says; the file the message must name."""
    if how == "garbage cert":
        (folder / "ca.pem").write_text("garbage\n")
        return f"{folder / 'ca.pem'} is not a PEM certificate"
    if how == "empty key":
        (folder / "ca-key.pem").write_text("")
        return f"{folder / 'ca-key.pem'} is not a PEM private key"
    if how == "cert is a folder":
        (folder / "ca.pem").unlink()
        (folder / "ca.pem").mkdir()
        return f"{folder / 'ca.pem'} cannot be read: Is a directory"
    if how == "key of another CA":
        (folder / "ca-key.pem").write_bytes((other / "ca-key.pem").read_bytes())
        return f"{folder / 'ca-key.pem'} is not the key of {folder / 'ca.pem'}"
    # a node's pair copied into the CA's place
    (folder / "ca.pem").write_bytes((other / "node.pem").read_bytes())
    (folder / "ca-key.pem").write_bytes((other / "node-key.pem").read_bytes())
    return f"{folder / 'ca.pem'} is not a CA certificate"


@pytest.mark.parametrize(
    "how", ["garbage cert", "empty key", "cert is a folder", "key of another CA", "node as CA"]
)
def test_a_damaged_or_mismatched_ca_is_named_and_signs_nothing(tmp_path: Path, how: str) -> None:
    """A damaged CA file ended in cryptography's "Unable to load PEM file ... MalformedFraming"
    naming no file; another CA's key, or a node's pair as the CA, signed node certificates that
    every peer refuses, with exit 0 and nothing said."""
    folder, other = tmp_path / "certs", tmp_path / "other"
    create_certificates(folder)
    create_certificates(other)
    (folder / "node.pem").unlink()
    (folder / "node-key.pem").unlink()
    said = _break_ca(folder, how, other)
    result = CliRunner().invoke(cli, ["certs", "create", str(folder), "--days", "30"])
    assert result.exit_code == 2, result.output
    assert said in result.output and "move ca.pem and ca-key.pem away" in result.output
    assert "Traceback" not in result.output and "MalformedFraming" not in result.output
    assert sorted(p.name for p in folder.iterdir()) == ["ca-key.pem", "ca.pem"]


@pytest.mark.parametrize("name", ["", "..", "ca", "a/b", "two\nlines", "tab\there", "bell\a"])
def test_node_names_that_are_no_plain_file_names_are_refused(tmp_path: Path, name: str) -> None:
    """A name with a newline made ``two\\nlines.pem`` and config lines folded over three lines."""
    target = tmp_path / "d"
    result = CliRunner().invoke(cli, ["certs", "create", str(target), "--name", name])
    assert result.exit_code == 2, result.output
    assert f"node name {name!r}: use a plain name such as 'node' or 'worker1'" in result.output
    assert not target.exists()


@pytest.mark.parametrize(
    ("directory", "said"),
    [
        ("", "expected a directory, got ''"),
        ("/dev/null", "/dev/null exists and is not a directory"),
    ],
)
def test_no_directory_is_refused_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, directory: str, said: str
) -> None:
    """``certs create "$CERTS"`` with the variable unset wrote a CA and its key into the
    current folder; /dev/null ended in "[Errno 17] File exists: '/dev/null'"."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    result = CliRunner().invoke(cli, ["certs", "create", directory])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [f"error: certs create: {said}", "1 problem found"]
    assert not list(here.iterdir())
