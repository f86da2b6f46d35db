#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A market client in another language, written from docs/market-protocol.md alone: Python's
urllib and json, and libsodium through ctypes. It runs the whole cycle as buyer, seller
and judge against a real `corral market serve` and checks what the protocol promises.

  market_client.py URL BUYER.json SELLER.json JUDGE.json

Prints "ok TASK_ID" and exits 0 when the cycle settles and the buyer decrypts the answer.
"""
import base64
import ctypes
import ctypes.util
import json
import sys
import urllib.error
import urllib.request

sodium = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
assert sodium.sodium_init() >= 0
NONCE, MAC, SEAL = 24, 16, 48  # crypto_secretbox_NONCEBYTES, _MACBYTES, crypto_box_SEALBYTES


def rand(n):
    b = ctypes.create_string_buffer(n)
    sodium.randombytes_buf(b, ctypes.c_size_t(n))
    return b.raw


def keypair():
    pk, sk = ctypes.create_string_buffer(32), ctypes.create_string_buffer(32)
    sodium.crypto_box_keypair(pk, sk)
    return pk.raw, sk.raw


def secretbox(key, msg):  # nonce || crypto_secretbox_easy(msg)
    nonce = rand(NONCE)
    out = ctypes.create_string_buffer(MAC + len(msg))
    sodium.crypto_secretbox_easy(out, msg, ctypes.c_ulonglong(len(msg)), nonce, key)
    return nonce + out.raw


def secretbox_open(key, sealed):
    out = ctypes.create_string_buffer(len(sealed) - NONCE - MAC)
    c = sealed[NONCE:]
    assert sodium.crypto_secretbox_open_easy(out, c, ctypes.c_ulonglong(len(c)), sealed[:NONCE], key) == 0
    return out.raw


def seal(pk, msg):
    out = ctypes.create_string_buffer(SEAL + len(msg))
    sodium.crypto_box_seal(out, msg, ctypes.c_ulonglong(len(msg)), pk)
    return out.raw


def seal_open(pk, sk, sealed):
    out = ctypes.create_string_buffer(len(sealed) - SEAL)
    assert sodium.crypto_box_seal_open(out, sealed, ctypes.c_ulonglong(len(sealed)), pk, sk) == 0
    return out.raw


b64 = lambda b: base64.b64encode(b).decode()
unb64 = base64.b64decode


def call(url, api_key, method, path, body=None):
    req = urllib.request.Request(url + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    if api_key:
        req.add_header("Authorization", "Bearer " + api_key)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            status, out = r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        status, out = e.code, json.loads(e.read())
    assert out["contract"] == 1 and out["test_mode"] is True and out["provider"] == "ledger", out
    return status, out


def main():
    url = sys.argv[1]
    buyer, seller, judge = (json.load(open(f)) for f in sys.argv[2:5])
    B = lambda m, p, b=None: call(url, buyer["api_key"], m, p, b)
    S = lambda m, p, b=None: call(url, seller["api_key"], m, p, b)
    J = lambda m, p, b=None: call(url, judge["api_key"], m, p, b)
    assert call(url, None, "GET", "/v1/health")[1]["status"] == "ok"
    codes = {c["code"]: c for c in call(url, None, "GET", "/v1/reason-codes")[1]["reason_codes"]}
    assert codes["meets_requirements"]["verdict"] == "accept"
    assert call(url, None, "GET", "/v1/me")[0] == 401

    # 1. Post: K random, the body sealed under it.
    k = rand(32)
    st, r = B("POST", "/v1/tasks", {"title": "py", "max_price": 250, "deadline": 4000000000,
                                    "body_ct": b64(secretbox(k, b"body from python"))})
    assert st == 201 and r["task"]["state"] == "open", r
    t = "/v1/tasks/" + r["task"]["id"]
    # 2. Claim with a fresh runner key; a second claim loses with 409.
    rpk, rsk = keypair()
    st, r = S("POST", t + "/claim", {"runner_key": rpk.hex()})
    assert st == 200 and r["task"]["state"] == "claimed", r
    assert S("POST", t + "/claim", {"runner_key": keypair()[0].hex()})[0] == 409
    # 3. Release K sealed to the runner key the buyer sees.
    st, r = B("GET", t)
    assert r["task"]["runner_key"] == rpk.hex() and r["task"]["key_released"] is False, r
    assert B("POST", t + "/key", {"wrap": b64(seal(bytes.fromhex(r["task"]["runner_key"]), k))})[0] == 200
    # 4. Work: open K and the body, answer under R sealed to the buyer.
    st, r = S("GET", t)
    kk = seal_open(rpk, rsk, unb64(r["task"]["key_wrap"]))
    assert secretbox_open(kk, unb64(r["task"]["body_ct"])) == b"body from python"
    rr = rand(32)
    st, r = S("POST", t + "/result", {"result_ct": b64(secretbox(rr, b"answer from python")),
                                      "result_key_wrap": b64(seal(bytes.fromhex(buyer["public_key"]), rr))})
    assert st == 200 and r["task"]["state"] == "submitted", r
    # 5. Review: fresh judge key; the buyer seals K || R to it.
    jpk, jsk = keypair()
    assert J("POST", t + "/review", {"runner_key": jpk.hex()})[0] == 200
    st, r = B("GET", t)
    assert B("POST", t + "/judge-key", {"wrap": b64(seal(bytes.fromhex(r["task"]["judge_key"]), k + rr))})[0] == 200
    st, r = J("GET", t)
    kr = seal_open(jpk, jsk, unb64(r["task"]["judge_wrap"]))
    assert secretbox_open(kr[32:], unb64(r["task"]["result_ct"])) == b"answer from python"
    # 6. Verdict by code only; free text is refused.
    assert J("POST", t + "/verdict", {"reason": "meets_requirements", "text": "x"})[0] == 400
    st, r = J("POST", t + "/verdict", {"reason": "meets_requirements"})
    assert st == 200 and r["task"]["state"] == "settled", r
    assert r["task"]["reason_text"] == codes["meets_requirements"]["text"], r
    # The buyer decrypts the result locally; price and fee as documented.
    st, r = B("GET", t)
    task = r["task"]
    r_key = seal_open(bytes.fromhex(buyer["public_key"]), bytes.fromhex(buyer["secret_key"]),
                      unb64(task["result_key_wrap"]))
    assert secretbox_open(r_key, unb64(task["result_ct"])) == b"answer from python"
    assert task["price"] == 250 and task["fee"] == 25, task
    print("ok " + task["id"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
