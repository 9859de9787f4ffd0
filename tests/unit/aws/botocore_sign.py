#!/usr/bin/env python3
# Signs requests with botocore (a SigV4 implementation nobody here wrote) at a fixed time, for the
# cross-check in sigv4_botocore_test.cpp. Input lines (tab-separated, hex for free text):
#   method url service region s3(0|1) body_hex headers_hex("name: value" lines)
# Arguments: access_key secret_key [session_token]. Output: one Authorization value per line.
import datetime
import sys
from unittest import mock

import botocore.auth
import botocore.awsrequest
import botocore.credentials

FIXED = datetime.datetime(2026, 11, 21, 12, 34, 56)


def main():
    token = sys.argv[3] if len(sys.argv) > 3 else None
    creds = botocore.credentials.Credentials(sys.argv[1], sys.argv[2], token)
    for line in sys.stdin:
        method, url, service, region, s3, body_hex, headers_hex = line.rstrip("\n").split("\t")
        headers = {}
        for h in bytes.fromhex(headers_hex).decode().split("\n"):
            if h:
                name, value = h.split(": ", 1)
                headers[name] = value
        request = botocore.awsrequest.AWSRequest(
            method=method, url=url, data=bytes.fromhex(body_hex), headers=headers)
        signer = botocore.auth.S3SigV4Auth if s3 == "1" else botocore.auth.SigV4Auth
        with mock.patch("botocore.auth.get_current_datetime", return_value=FIXED):
            signer(creds, service, region).add_auth(request)
        print(request.headers["Authorization"], flush=True)


if __name__ == "__main__":
    main()
