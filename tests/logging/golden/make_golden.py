#!/usr/bin/env python3
"""Writes the golden event-file records of tests/logging, computed by hand
from docs/semantics.md (Summary writing) with no protobuf library: wire keys of SW-30..33,
proto3 presence rules of SW-35, TFRecord framing of SW-20 and a bitwise
CRC-32C of SW-21. Run it from this directory; the .bin files are committed.

  file_version.bin  Event{wall_time=1700000000.0, file_version="brain.Event:2"}
  scalar.bin        Event{wall_time=1700000000.5, step=42,
                          summary{value{tag="loss", simple_value=0.25}}}
  histogram.bin     Event{wall_time=1700000001.0, step=7,
                          summary{value{tag="w", histo of the values {0.0}}}}
                    histo = {num=1, bucket_limit=[0.0, 1e-12, DBL_MAX],
                             bucket=[0, 1, 0]} (min=max=sum=sum_squares=0
                    are proto3 defaults and are not written)
  events.bin        the three records above, one after the other
  hparams.bin       Event{wall_time=1700000000.0, summary{value{
                          tag="_hparams_/session_start_info",
                          tensor={dtype=DT_FLOAT, shape [0]},
                          metadata{plugin_data{plugin_name="hparams",
                            content=HParamsPluginData{version=0,
                              session_start_info{hparams{batch_size: 32,
                              optimizer: "adam", shuffle: true},
                              start_time_secs=1700000000.0}}}}}}}
                    (TensorBoard's hparams plugin: plugin_data.proto,
                    api.proto, google.protobuf.Value of struct.proto; map
                    entries sorted by key, each with its key and value)
"""
import struct
import sys

DBL_MAX = sys.float_info.max


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def mask(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283
assert crc32c(bytes(32)) == 0x8A9136AA


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def ld(key, payload):  # length-delimited field
    return bytes([key]) + varint(len(payload)) + payload


def dbl(key, x):
    return bytes([key]) + struct.pack("<d", x)


def record(payload):
    header = struct.pack("<Q", len(payload))
    return (header + struct.pack("<I", mask(crc32c(header))) + payload +
            struct.pack("<I", mask(crc32c(payload))))


file_version = dbl(0x09, 1700000000.0) + ld(0x1A, b"brain.Event:2")

scalar_value = ld(0x0A, b"loss") + b"\x15" + struct.pack("<f", 0.25)
scalar = (dbl(0x09, 1700000000.5) + b"\x10" + varint(42) +
          ld(0x2A, ld(0x0A, scalar_value)))

limits = [0.0, 1e-12, DBL_MAX]
counts = [0.0, 1.0, 0.0]
histo = (dbl(0x19, 1.0) +
         ld(0x32, b"".join(struct.pack("<d", x) for x in limits)) +
         ld(0x3A, b"".join(struct.pack("<d", x) for x in counts)))
histo_value = ld(0x0A, b"w") + ld(0x2A, histo)
histogram = (dbl(0x09, 1700000001.0) + b"\x10" + varint(7) +
             ld(0x2A, ld(0x0A, histo_value)))

def entry(key, value):  # map<string, Value> entry: key = 1, value = 2
    return ld(0x0A, ld(0x0A, key) + ld(0x12, value))


hparams_map = (entry(b"batch_size", dbl(0x11, 32.0)) +       # number_value = 2
               entry(b"optimizer", ld(0x1A, b"adam")) +        # string_value = 3
               entry(b"shuffle", b"\x20\x01"))                # bool_value = 4
start_info = hparams_map + dbl(0x29, 1700000000.0)          # start_time_secs = 5
plugin_content = ld(0x1A, start_info)                        # session_start_info = 3
null_tensor = b"\x08\x01" + ld(0x12, ld(0x12, b""))          # DT_FLOAT, shape [0]
hp_metadata = ld(0x0A, ld(0x0A, b"hparams") + ld(0x12, plugin_content))
hp_value = (ld(0x0A, b"_hparams_/session_start_info") + ld(0x42, null_tensor) +
            ld(0x4A, hp_metadata))
hparams_event = dbl(0x09, 1700000000.0) + ld(0x2A, ld(0x0A, hp_value))

files = {
    "file_version.bin": record(file_version),
    "scalar.bin": record(scalar),
    "histogram.bin": record(histogram),
    "hparams.bin": record(hparams_event),
}
files["events.bin"] = b"".join(files[k] for k in
                               ("file_version.bin", "scalar.bin", "histogram.bin"))
for name, data in files.items():
    with open(name, "wb") as f:
        f.write(data)
    print(name, len(data), data.hex())
