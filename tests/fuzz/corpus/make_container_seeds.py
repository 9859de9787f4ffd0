#!/usr/bin/env python3
# Writes the seed inputs of the container fuzz targets: corpus/archive/ (ZIP, TAR, .tar.gz, each
# limit of fuzz::small_limits() reached once) and corpus/mime/ (e-mails and an mbox).
#
#   tests/fuzz/corpus/make_container_seeds.py
#
# Python's standard library only, plus Debian's `zip` for the encrypted archive (skipped when it
# is missing). Fixed dates and names: running it again writes the same files, except that
# encrypted.zip gets a new random encryption header.
import base64
import gzip
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ARCHIVE = os.path.join(HERE, "archive")
MIME = os.path.join(HERE, "mime")
DATE = (2026, 11, 23, 10, 0, 0)


def pdf(text):
    return b"%PDF-1.4\n% " + text.encode() + b"\n%%EOF\n"


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def zip_of(files, method=zipfile.ZIP_DEFLATED):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in files:
            info = zipfile.ZipInfo(name, DATE)
            info.compress_type = method
            z.writestr(info, data)
    return out.getvalue()


def tar_of(entries):
    """entries: (name, bytes) for files, (name, None) for a directory, (name, "->target") for a
    symbolic link. Ends after the two zero blocks (no padding to a 10 KiB record)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 1795428000
            info.uname = info.gname = "ingestd"
            if data is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                t.addfile(info)
            elif isinstance(data, str):
                info.type = tarfile.SYMTYPE
                info.linkname = data[2:]
                t.addfile(info)
            else:
                info.size = len(data)
                info.mode = 0o644
                t.addfile(info, io.BytesIO(data))
    end = sum(512 + (-(-len(d) // 512) * 512 if isinstance(d, bytes) else 0) for _, d in entries) + 1024
    return out.getvalue()[:end]


def gz(data):
    return gzip.compress(data, mtime=0)


def archives():
    two = [("invoices/a.pdf", pdf("invoice a")), ("b.pdf", pdf("invoice b"))]
    write(ARCHIVE, "two_files.zip", zip_of(two))
    write(ARCHIVE, "two_files.tar", tar_of(two))
    write(ARCHIVE, "two_files.tar.gz", gz(tar_of(two)))
    write(ARCHIVE, "empty.zip", b"PK\x05\x06" + bytes(18))
    # container.unsafe_path
    write(ARCHIVE, "traversal.zip", zip_of([("ok.pdf", pdf("ok")), ("docs/../../escape.pdf", pdf("bad"))]))
    write(ARCHIVE, "absolute.tar", tar_of([("/tmp/absolute.pdf", pdf("bad"))]))
    # container.ratio: 15 KiB of zeros in a zip of about 150 bytes (under the total limit).
    write(ARCHIVE, "high_ratio.zip", zip_of([("zeros.pdf", pdf("z") + bytes(15 * 1024))]))
    # container.too_large first: 1 MiB of zeros, about 1 KiB compressed.
    write(ARCHIVE, "bomb_1mib.tar.gz", gz(tar_of([("zeros.pdf", bytes(1 << 20))])))
    # A member over max_member_bytes is skipped, the other kept.
    write(ARCHIVE, "member_too_large.zip",
          zip_of([("big.pdf", pdf("big " * 1300)), ("small.pdf", pdf("small"))]))
    # container.too_large: two members of 8.5 KiB.
    text = "Total 1.234,56 EUR 15.03.2024\n" * 290
    write(ARCHIVE, "total_too_large.zip", zip_of([("a.pdf", pdf(text)), ("b.pdf", pdf(text))]))
    # container.too_many_members: five.
    five = [(f"m{i}.pdf", pdf(str(i))) for i in range(5)]
    write(ARCHIVE, "too_many_members.zip", zip_of(five))
    write(ARCHIVE, "too_many_members.tar.gz", gz(tar_of(five)))
    # Directories and links are passed over; stored (not deflated) data.
    write(ARCHIVE, "links_and_dirs.tar",
          tar_of([("docs", None), ("docs/a.pdf", pdf("a")), ("docs/link.pdf", "->a.pdf")]))
    write(ARCHIVE, "stored.zip", zip_of([("a.pdf", pdf("stored"))], zipfile.ZIP_STORED))
    # A truncated tar: the first member kept, the second cut (a problem, not an error).
    tar = tar_of([("first.pdf", pdf("x" * 700)), ("second.pdf", pdf("y" * 1500))])
    write(ARCHIVE, "truncated.tar", tar[:512 + 1024 + 512 + 600])
    # A damaged second header (its checksum no longer matches): the first member kept.
    damaged = bytearray(tar_of(two))
    damaged[1024] ^= 0x20
    write(ARCHIVE, "damaged_header.tar", bytes(damaged))
    # container.encrypted: ZipCrypto through Debian's zip.
    if shutil.which("zip"):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "secret.pdf"), "wb") as f:
                f.write(pdf("secret"))
            os.utime(os.path.join(d, "secret.pdf"), (1795428000, 1795428000))
            subprocess.run(["zip", "-q", "-X", "-P", "password", "secret.zip", "secret.pdf"], cwd=d, check=True)
            with open(os.path.join(d, "secret.zip"), "rb") as f:
                write(ARCHIVE, "encrypted.zip", f.read())


def b64(data):
    text = base64.b64encode(data).decode()
    return "\r\n".join(text[i:i + 76] for i in range(0, len(text), 76))


HEAD = ("From: Alice <alice@example.com>\r\nTo: Bob <bob@example.com>\r\nSubject: {subject}\r\n"
        "Date: Mon, 23 Nov 2026 10:00:00 +0000\r\nMessage-ID: <{mid}@example.com>\r\nMIME-Version: 1.0\r\n")


def mail(subject, content_type, body, mid=None):
    return (HEAD.format(subject=subject, mid=mid or subject.replace(" ", "."))
            + "Content-Type: " + content_type + "\r\n\r\n" + body)


def attachment(name, data, ctype="application/pdf", boundary="b1"):
    return (f"--{boundary}\r\nContent-Type: {ctype}; name=\"{name}\"\r\n"
            f"Content-Disposition: attachment; filename=\"{name}\"\r\n"
            f"Content-Transfer-Encoding: base64\r\n\r\n{b64(data)}\r\n")


def mails():
    png = b"\x89PNG\r\n\x1a\n" + bytes(24)
    body = ("--b1\r\nContent-Type: multipart/alternative; boundary=\"b2\"\r\n\r\n"
            "--b2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nPlease find the invoice attached.\r\n"
            "--b2\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
            "<p>Please find the <b>invoice</b> attached=2E</p>\r\n--b2--\r\n"
            + attachment("invoice.pdf", pdf("invoice 42"))
            + attachment("scan.png", png, "image/png")
            + "--b1--\r\n")
    multipart = mail("Invoice 42", "multipart/mixed; boundary=\"b1\"", body)
    write(MIME, "multipart_attachments.eml", multipart.encode())

    inner = mail("Fwd inner", "multipart/mixed; boundary=\"in\"",
                 "--in\r\nContent-Type: text/plain\r\n\r\nthe original\r\n"
                 + attachment("inner.pdf", pdf("inner"), boundary="in") + "--in--\r\n")
    nested = mail("Fwd", "multipart/mixed; boundary=\"b1\"",
                  "--b1\r\nContent-Type: text/plain\r\n\r\nforwarded below\r\n"
                  "--b1\r\nContent-Type: message/rfc822\r\nContent-Disposition: attachment; filename=\"original.eml\"\r\n\r\n"
                  + inner + "\r\n--b1--\r\n")
    write(MIME, "nested_rfc822.eml", nested.encode())

    one = mail("first", "multipart/mixed; boundary=\"b1\"",
               "--b1\r\nContent-Type: text/plain\r\n\r\none\r\n" + attachment("a.pdf", pdf("a")) + "--b1--\r\n")
    two = mail("second", "text/plain; charset=utf-8", "two\r\n>From the archive\r\n")
    mbox = ("From alice@example.com Mon Nov 23 10:00:00 2026\n" + one.replace("\r\n", "\n")
            + "\nFrom bob@example.com Mon Nov 23 11:00:00 2026\n" + two.replace("\r\n", "\n"))
    write(MIME, "two_messages.mbox", mbox.encode())

    broken = mail("broken", "multipart/mixed; boundary=\"b1\"",
                  "--b1\r\nContent-Type: text/plain\r\n\r\nbroken attachment\r\n"
                  "--b1\r\nContent-Type: application/pdf; name=\"broken.pdf\"\r\n"
                  "Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK*&^%$ not base64 !!\r\nJVBE=Ri0=\r\n"
                  "--b1\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: x-uuencode\r\n\r\n"
                  "begin 644 x.pdf\r\n#)5!$\r\nend\r\n--b1--\r\n")
    write(MIME, "broken_base64.eml", broken.encode())

    encrypted = mail("secret", "multipart/encrypted; protocol=\"application/pgp-encrypted\"; boundary=\"x\"",
                     "--x\r\nContent-Type: application/pgp-encrypted\r\n\r\nVersion: 1\r\n"
                     "--x\r\nContent-Type: application/octet-stream\r\n\r\n-----BEGIN PGP MESSAGE-----\r\n--x--\r\n")
    write(MIME, "encrypted.eml", encrypted.encode())

    many = mail("many", "multipart/mixed; boundary=\"b1\"",
                "".join(attachment(f"m{i}.pdf", pdf(str(i))) for i in range(5)) + "--b1--\r\n")
    write(MIME, "too_many_attachments.eml", many.encode())

    # Encoded names: an RFC 2231 file name with directories, an RFC 2047 one, none at all.
    names = mail("names", "multipart/mixed; boundary=\"b1\"",
                 "--b1\r\nContent-Type: application/pdf\r\n"
                 "Content-Disposition: attachment; filename*=utf-8''..%2F..%2Fetc%2Fr%C3%A9sum%C3%A9.pdf\r\n"
                 "Content-Transfer-Encoding: base64\r\n\r\n" + b64(pdf("one")) + "\r\n"
                 "--b1\r\nContent-Type: application/pdf; name=\"=?utf-8?q?Rechnung_M=C3=A4rz.pdf?=\"\r\n"
                 "Content-Transfer-Encoding: base64\r\n\r\n" + b64(pdf("two")) + "\r\n"
                 "--b1\r\nContent-Type: image/jpeg\r\nContent-Transfer-Encoding: base64\r\n\r\n"
                 + b64(b"\xff\xd8\xff\xe0" + bytes(16)) + "\r\n--b1--\r\n")
    write(MIME, "encoded_names.eml", names.encode())

    html = mail("html only", "text/html; charset=iso-8859-1",
                "<html><body><p>Rechnung f\xfcr M\xe4rz</p><script>x</script></body></html>\r\n")
    write(MIME, "html_only.eml", html.encode("latin-1"))


if __name__ == "__main__":
    archives()
    mails()
