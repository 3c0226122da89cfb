"""TLS material for ``distributed.communication_backend: tls``: make it, and check it.

:func:`create_certificates` writes a private certificate authority and node certificates signed
by it (what ``openclaw-dask certs create DIR`` runs). Dask's TLS is mutual: scheduler, workers
and clients each present a certificate and accept only peers signed by ``distributed.tls.ca_file``
(distributed turns hostname checks off, the CA is the trust), so a node certificate carries both
the server and the client extended key usage. Subject alternative names cover ``localhost``,
``127.0.0.1``, ``::1``, this host's name and any ``hosts`` given, so the certificates also work
with tools that do check names.

:func:`tls_problems` checks the configured files beyond "exists": each is PEM of the right kind,
the key belongs to the certificate, the certificate was issued by the CA and is valid now. Keys
are read with ``cryptography`` (a dependency of distributed); encrypted keys are not supported
(Dask's TLS config has no passphrase).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openclaw_dask.config.errors import not_a_file
from openclaw_dask.config.types import InvalidValueError, check_host

CA_CERT, CA_KEY = "ca.pem", "ca-key.pem"
CA_DAYS, NODE_DAYS = 3650, 825
TLS_KEYS = ("ca_file", "cert", "key")
#: The last moment a certificate can be valid to: X.509 GeneralizedTime has four year digits and
#: Python's datetime (which ``cryptography`` takes) ends in year 9999 too.
LATEST_END = dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)


@dataclass(frozen=True)
class NodeFiles:
    """The files of one node certificate (paths are absolute)."""

    name: str
    cert: Path
    key: Path


@dataclass(frozen=True)
class CertificateSet:
    """What :func:`create_certificates` wrote (or reused)."""

    ca_file: Path
    ca_key: Path
    nodes: tuple[NodeFiles, ...]
    ca_reused: bool

    def config_lines(self, node: NodeFiles | None = None) -> str:
        """The ``openclaw.config`` lines that use the CA and ``node`` (default: the first)."""
        node = node or self.nodes[0]
        return (
            "distributed:\n"
            "  communication_backend: tls\n"
            "  tls:\n"
            f"    ca_file: {_yaml_path(self.ca_file)}\n"
            f"    cert: {_yaml_path(node.cert)}\n"
            f"    key: {_yaml_path(node.key)}\n"
        )


def _yaml_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a YAML value: plain where YAML reads it back as written, else quoted.

    A folder such as ``my: certs`` or ``certs #2`` printed plain made the pasted lines a
    YAML error (a mapping inside a value) or cut the path at the ``#`` (a comment). Letters
    beyond ASCII stay as they are: ``für`` was printed as ``"f\\xFCr"``.
    """
    import yaml

    text = yaml.safe_dump(
        str(path), default_flow_style=True, width=10_000, allow_unicode=True
    ).strip()
    return text.removesuffix("...").strip()


def default_hosts() -> list[str]:
    """Names every node certificate covers: loopback and this host's names."""
    names = ["localhost", "127.0.0.1", "::1", socket.gethostname()]
    fqdn = socket.getfqdn()
    if fqdn and fqdn not in names:
        names.append(fqdn)
    return names


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def max_days(now: dt.datetime | None = None) -> int:
    """The longest validity, in days from ``now``, that a certificate can encode.

    Parameters
    ----------
    now
        The start (default: the current time).

    Returns
    -------
    int
        Whole days such that ``now + days`` is not after :data:`LATEST_END`.
    """
    return (LATEST_END - (now or _now())).days


def check_days(days: int) -> int:
    """Return ``days`` if a certificate can be valid that long from now, else raise ValueError.

    Checked before anything is written: a too-long validity used to fail with an
    ``OverflowError`` after the CA files were already on disk.
    """
    limit = max_days()
    if not 1 <= days <= limit:
        raise ValueError(
            f"--days {days}: expected 1 to {limit:,} (certificates end by {LATEST_END:%Y-%m-%d})"
        )
    return days


def check_cert_host(host: str) -> str:
    """Return ``host`` as it goes into a certificate (an IP without brackets), else raise.

    Uses the same rule as hosts in the config (:func:`openclaw_dask.config.types.check_host`),
    so a typo such as ``exa mple.com`` is refused instead of becoming a useless DNS name.

    Raises
    ------
    ValueError
        ``host`` is neither an IP address nor a valid DNS host name.
    """
    try:
        check_host(host)
    except InvalidValueError as exc:
        raise ValueError(f"--host: {exc}") from None
    try:
        # check_host accepts "[::1]" (URL form); the certificate needs the bare address
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return host


def _write_private(path: Path, data: bytes) -> None:
    """Write a key readable by its owner only (created 0600, never world-readable)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)


def _write_all(files: Mapping[Path, tuple[bytes, bool]]) -> None:
    """Write ``{path: (data, private)}`` all or nothing, as far as the file system allows.

    Everything goes to temporary files next to their targets first and is renamed into place
    only once all were written, so a full disk or a permission error leaves no half set
    (a CA without its key, a certificate without its key) behind. Should a rename fail, the
    files this call created are removed again; a file it replaced (``--force``) stays replaced.
    """
    temps: dict[Path, Path] = {}
    created: list[Path] = []
    try:
        for path, (data, private) in files.items():
            temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            temps[path] = temp
            if private:
                _write_private(temp, data)
            else:
                temp.write_bytes(data)
        for path, temp in temps.items():
            existed = os.path.lexists(path)
            os.replace(temp, path)
            if not existed:
                created.append(path)
    except BaseException:
        for path in [*temps.values(), *created]:
            path.unlink(missing_ok=True)
        raise


def _new_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common_name: str) -> Any:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "openclaw-dask"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _make_ca(days: int) -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    key = _new_key()
    subject = _name(f"openclaw-dask CA {socket.gethostname()}")
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _public_der(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _load_ca(directory: Path) -> tuple[Any, Any]:
    """The CA of ``directory``, checked: a CA certificate and its own private key.

    A damaged file ended in cryptography's "Unable to load PEM file ... MalformedFraming",
    naming neither file; a ``ca-key.pem`` of another CA, or a node's pair in the CA's place,
    signed node certificates that every peer refuses, and the command said nothing.

    Raises
    ------
    ValueError
        A file that cannot be read, is not PEM of its kind, is not a CA, or a key that is not
        the CA's. Nothing is written then.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert_path, key_path = directory / CA_CERT, directory / CA_KEY
    # what to do is the same for each: the CA cannot be repaired, only replaced
    todo = (
        "restore the CA's files, or move ca.pem and ca-key.pem away to make a new CA (every "
        "node then needs a new certificate)"
    )
    texts = {path: _read(str(path)) for path in (cert_path, key_path)}
    for path, data in texts.items():
        if isinstance(data, str):
            raise ValueError(f"{path} {data}; {todo}")
    try:
        cert = x509.load_pem_x509_certificate(texts[cert_path])
    except ValueError:
        raise ValueError(f"{cert_path} is not a PEM certificate; {todo}") from None
    try:
        key = serialization.load_pem_private_key(texts[key_path], password=None)
    except TypeError:  # encrypted
        raise ValueError(
            f"{key_path} is an encrypted private key; certs create signs with an unencrypted one"
        ) from None
    except ValueError:
        raise ValueError(f"{key_path} is not a PEM private key; {todo}") from None
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        raise ValueError(f"{cert_path} is not a CA certificate (a node's?); {todo}")
    if _public_der(cert.public_key()) != _public_der(key.public_key()):
        raise ValueError(f"{key_path} is not the key of {cert_path}; {todo}")
    return cert, key


def _check_ca_outlives(ca_cert: Any, path: Path, days: int) -> None:
    """Refuse (ValueError) node certificates of ``days`` that the reused CA would not cover."""
    end = ca_cert.not_valid_after_utc
    left = (end - _now()).days
    if left < 1:
        raise ValueError(
            f"the CA {path} expired on {end:%Y-%m-%d} (or does within a day): it can sign no "
            "new node; move ca.pem and ca-key.pem away to make a new CA (every node then "
            "needs a new certificate)"
        )
    if days > left:
        raise ValueError(
            f"--days {days}: a node certificate cannot outlive its CA ({path} ends on "
            f"{end:%Y-%m-%d}, {left} days from now); give --days {left} or less"
        )


def _san(hosts: Iterable[str]) -> Any:
    from cryptography import x509

    entries: list[Any] = []
    for host in dict.fromkeys(hosts):  # unique, in order
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            entries.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(entries)


def _make_node(
    directory: Path, name: str, hosts: list[str], ca_cert: Any, ca_key: Any, days: int
) -> tuple[NodeFiles, dict[Path, tuple[bytes, bool]]]:
    """A node's files and their contents ``{path: (data, private)}``, not written yet."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID

    key = _new_key()
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_san(hosts), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = NodeFiles(
        name, (directory / f"{name}.pem").resolve(), (directory / f"{name}-key.pem").resolve()
    )
    return files, {
        files.key: (_key_pem(key), True),
        files.cert: (cert.public_bytes(serialization.Encoding.PEM), False),
    }


def create_certificates(
    directory: str | os.PathLike[str],
    names: Iterable[str] = ("node",),
    hosts: Iterable[str] = (),
    *,
    overwrite: bool = False,
    days: int = NODE_DAYS,
) -> CertificateSet:
    """Make (or reuse) a CA in ``directory`` and a certificate and key per node name.

    Parameters
    ----------
    directory
        Created if missing. An existing ``ca.pem`` + ``ca-key.pem`` there is reused, so more
        nodes can be added later with the same CA.
    names
        One certificate per name: ``NAME.pem`` and ``NAME-key.pem``.
    hosts
        Extra host names or IP addresses for the certificates' subject alternative names
        (``localhost``, ``127.0.0.1``, ``::1`` and this host's name are always in).
    overwrite
        Replace existing node files (never the CA).
    days
        Validity of the node certificates.

    Returns
    -------
    CertificateSet

    Raises
    ------
    FileExistsError
        A node file exists and ``overwrite`` is false.
    ValueError
        An empty ``directory`` or one that is no directory, a name that is not a plain file
        name, a host that is neither an IP address nor a DNS host name, ``days`` beyond what a
        certificate can encode, ``ca.pem`` without ``ca-key.pem``, or a CA that cannot be
        read, is not a CA or whose key is not its own. Nothing is written then.
    """
    from cryptography.hazmat.primitives import serialization

    if not str(directory).strip():  # "$CERTS" unset: Path("") put a CA key into the cwd
        raise ValueError(f"expected a directory, got {str(directory)!r}")
    folder = Path(directory).expanduser()
    names = list(dict.fromkeys(names)) or ["node"]
    for name in names:
        # a newline or tab in a name made files that `ls` shows on two lines and config lines
        # that YAML folds (quoted over three lines)
        bad = not name or not name.isprintable() or "/" in name or name.startswith(".")
        if bad or name in ("ca", "ca-key"):
            raise ValueError(f"node name {name!r}: use a plain name such as 'node' or 'worker1'")
    extra_hosts = [check_cert_host(h) for h in hosts]
    check_days(days)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a device or a socket (a file is refused by the command line)
        raise ValueError(f"{folder} exists and is not a directory") from None
    has_cert, has_key = (folder / CA_CERT).exists(), (folder / CA_KEY).exists()
    if has_cert != has_key:
        missing = CA_KEY if has_cert else CA_CERT
        raise ValueError(f"{folder} has half a CA ({missing} is missing); use an empty directory")
    if not overwrite:
        for name in names:
            for path in (folder / f"{name}.pem", folder / f"{name}-key.pem"):
                if path.exists():
                    raise FileExistsError(f"{path} exists (pass --force to replace it)")
    files: dict[Path, tuple[bytes, bool]] = {}
    if has_cert:
        ca_cert, ca_key = _load_ca(folder)
        _check_ca_outlives(ca_cert, folder / CA_CERT, days)
    else:
        # a new CA lasts at least as long as the nodes it signs (a node's certificate is
        # refused by every peer once its CA has expired, whatever its own end date)
        ca_cert, ca_key = _make_ca(max(CA_DAYS, days))
        files[folder / CA_KEY] = (_key_pem(ca_key), True)
        files[folder / CA_CERT] = (ca_cert.public_bytes(serialization.Encoding.PEM), False)
    all_hosts = [*default_hosts(), *extra_hosts]
    nodes: list[NodeFiles] = []
    for name in names:
        node, contents = _make_node(folder, name, all_hosts, ca_cert, ca_key, days)
        nodes.append(node)
        files.update(contents)
    # every certificate is made in memory first: a failure while signing writes nothing
    _write_all(files)
    return CertificateSet(
        (folder / CA_CERT).resolve(), (folder / CA_KEY).resolve(), tuple(nodes), ca_reused=has_cert
    )


# ---- checking configured files ----------------------------------------------------------------


def _read(path: str) -> bytes | str:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"


def tls_problems(values: Mapping[str, Any], bad: Callable[[str, str], None]) -> None:
    """Check ``distributed.tls.*`` for ``communication_backend: tls``; report with ``bad``.

    ``bad(dotted key, message)`` is called once per problem: a missing setting or file, a file
    that is not PEM of the expected kind, a key that does not belong to the certificate, a
    certificate not issued by the CA or not valid now.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    paths = {part: values[f"distributed.tls.{part}"] for part in TLS_KEYS}
    unset = [f"distributed.tls.{part}" for part, path in paths.items() if not path]
    if unset:
        # said where tls was chosen: unset keys have no line of their own to point at
        chosen = values["distributed.communication_backend"]
        bad(
            "distributed.communication_backend",
            f"{chosen}{'' if chosen == 'tls' else ' (tls)'} needs {_and(unset)} set (PEM "
            "files); make them with `openclaw-dask certs create DIR`",
        )
    loaded: dict[str, Any] = {}
    for part, path in paths.items():
        key = f"distributed.tls.{part}"
        if not path:
            continue
        if not os.path.isfile(os.path.expanduser(path)):
            bad(key, not_a_file(path))
            continue
        data = _read(path)
        if isinstance(data, str):
            bad(key, f"{path} {data}")
            continue
        try:
            if part == "key":
                loaded[part] = serialization.load_pem_private_key(data, password=None)
            else:
                loaded[part] = x509.load_pem_x509_certificate(data)
        except TypeError:  # an encrypted key
            bad(key, f"{path} is an encrypted private key; Dask's TLS needs an unencrypted one")
        except ValueError:
            kind = "private key" if part == "key" else "certificate"
            bad(key, f"{path} is not a PEM {kind}")
    _check_pair(paths, loaded, bad)


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _check_pair(
    paths: Mapping[str, str], loaded: Mapping[str, Any], bad: Callable[[str, str], None]
) -> None:
    """Key matches certificate; certificate issued by the CA and valid now."""
    from cryptography.exceptions import InvalidSignature

    cert, key, ca = loaded.get("cert"), loaded.get("key"), loaded.get("ca_file")
    if (
        cert is not None
        and key is not None
        and _public_der(cert.public_key()) != _public_der(key.public_key())
    ):
        bad("distributed.tls.key", f"{paths['key']} is not the key of {paths['cert']}")
    if cert is not None and ca is not None:
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature) as exc:
            reason = str(exc) or "its signature does not verify"  # InvalidSignature: no text
            bad(
                "distributed.tls.cert",
                f"{paths['cert']} was not issued by the CA {paths['ca_file']} ({reason})",
            )
    now = _now()
    for part, c in (("cert", cert), ("ca_file", ca)):
        if c is not None and not c.not_valid_before_utc <= now <= c.not_valid_after_utc:
            bad(
                f"distributed.tls.{part}",
                f"{paths[part]} is valid from {c.not_valid_before_utc:%Y-%m-%d} to "
                f"{c.not_valid_after_utc:%Y-%m-%d}, not now",
            )
