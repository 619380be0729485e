#pragma once

// Compressed record files written by an independent writer: Python's own zlib
// and gzip modules, with the TFRecord framing and its CRC-32C computed in
// Python too (nothing of quern's). The script is written into the test's
// temporary directory and run with `python3` (or $QUERN_PYTHON3); a missing
// python3 fails the test with a message, it never skips it.
//   python_records::write(dir, "tfrecord", "GZIP", payloads) -> a file
//   python_records::read(dir, "GZIP", file)                   -> its payloads
// Kinds: GZIP (one member, with a file name in its header), GZIP-plain (no
// name), GZIP-members (two members, concatenated), ZLIB (level 6),
// ZLIB-stored (level 0: stored blocks), ZLIB-flushed (a sync flush after each
// part, as a writer that flushes produces).

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace quern::test::python_records {

inline const char* script = R"PY(
import gzip, io, struct, sys, zlib

def crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table

TABLE = crc32c_table()

def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF

def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

def frame(p):
    h = struct.pack('<Q', len(p))
    return (h + struct.pack('<I', masked(crc32c(h))) + p +
            struct.pack('<I', masked(crc32c(p))))

def gz(data, name=''):
    out = io.BytesIO()
    with gzip.GzipFile(filename=name, mode='wb', fileobj=out, mtime=0) as f:
        f.write(data)
    return out.getvalue()

def flushed(data, parts):
    c = zlib.compressobj()
    step = max(1, len(data) // parts)
    out = b''
    for i in range(0, len(data), step):
        out += c.compress(data[i:i + step]) + c.flush(zlib.Z_SYNC_FLUSH)
    return out + c.flush()

def compress(kind, data):
    if kind == 'GZIP':
        return gz(data, 'records')
    if kind == 'GZIP-plain':
        return gzip.compress(data, mtime=0)
    if kind == 'GZIP-members':
        half = len(data) // 2
        return gz(data[:half]) + gz(data[half:])
    if kind == 'ZLIB':
        return zlib.compress(data)
    if kind == 'ZLIB-stored':
        return zlib.compress(data, 0)
    if kind == 'ZLIB-flushed':
        return flushed(data, 4)
    raise SystemExit('unknown kind ' + kind)

def payloads_of(path):
    with open(path) as f:
        return [bytes.fromhex(line) for line in f.read().split('\n')[:-1]]

def unframe(data):
    out, pos = [], 0
    while pos < len(data):
        h = data[pos:pos + 8]
        if len(h) < 8 or struct.unpack('<I', data[pos + 8:pos + 12])[0] != masked(crc32c(h)):
            raise SystemExit('bad header at %d' % pos)
        n = struct.unpack('<Q', h)[0]
        p = data[pos + 12:pos + 12 + n]
        if len(p) < n or struct.unpack('<I', data[pos + 12 + n:pos + 16 + n])[0] != masked(crc32c(p)):
            raise SystemExit('bad payload at %d' % pos)
        out.append(p)
        pos += 16 + n
    return out

def main():
    cmd, kind, src, dst = sys.argv[1:5]
    if cmd in ('tfrecord', 'raw'):
        ps = payloads_of(src)
        data = b''.join(frame(p) for p in ps) if cmd == 'tfrecord' else b''.join(ps)
        with open(dst, 'wb') as f:
            f.write(compress(kind, data))
    elif cmd == 'read':
        with open(src, 'rb') as f:
            raw = f.read()
        if kind == 'GZIP':
            data = gzip.decompress(raw)
        elif kind == 'ZLIB':
            d = zlib.decompressobj()
            data = d.decompress(raw)
            if not d.eof or d.unused_data:
                raise SystemExit('not one whole ZLIB stream')
        elif kind in ('GZIP-partial', 'ZLIB-partial'):
            # what a stream not yet ended decompresses to (a flushed writer's)
            d = zlib.decompressobj(31 if kind == 'GZIP-partial' else 15)
            data = d.decompress(raw)
        else:
            raise SystemExit('unknown kind ' + kind)
        with open(dst, 'w') as f:
            f.write(''.join(p.hex() + '\n' for p in unframe(data)))
    else:
        raise SystemExit('unknown command ' + cmd)

main()
)PY";

inline std::string slurp(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

inline std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

inline std::string unhex(const std::string& text) {
  std::string out;
  for (size_t i = 0; i + 1 < text.size(); i += 2)
    out += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
  return out;
}

/// Runs the script with `args`; fails the test with python's output if it
/// fails, and with a clear message if there is no python3.
inline void run(const temp_dir& dir, const std::string& args) {
  auto py = dir.file("python_records.py");
  if (slurp(py).empty())
    dir.write("python_records.py", script);
  const char* configured = std::getenv("QUERN_PYTHON3");
  std::string python = configured != nullptr ? configured : "python3";
  auto log = dir.file("python.log");
  auto cmd = python + " '" + py + "' " + args + " >'" + log + "' 2>&1";
  int status = std::system(cmd.c_str());
  if (status != 0) {
    INFO("python3 (with its zlib and gzip modules) writes these tests' files: it must be "
         "installed (Debian's python3), or QUERN_PYTHON3 must name it");
    INFO("command: " << cmd);
    INFO("output: " << slurp(log));
    FAIL("python3 failed with status " << status);
  }
}

/// `payloads` framed as TFRecords ("tfrecord") or end to end ("raw"), then
/// compressed as `kind` says, into <dir>/<name>.
inline std::string write(const temp_dir& dir, const std::string& what,
                         const std::string& kind,
                         const std::vector<std::string>& payloads,
                         const std::string& name) {
  std::string lines;
  for (auto& p : payloads)
    lines += hex(p) + "\n";
  auto src = dir.write(name + ".payloads", lines);
  auto dst = dir.file(name);
  run(dir, what + " " + kind + " '" + src + "' '" + dst + "'");
  return dst;
}

/// The payloads of a compressed TFRecord file (GZIP or ZLIB; GZIP-partial
/// and ZLIB-partial for a stream not yet ended), as Python's modules
/// decompress it; the test fails if Python finds it damaged.
inline std::vector<std::string> read(const temp_dir& dir, const std::string& kind,
                                     const std::string& file) {
  auto dst = file + ".read";
  run(dir, "read " + kind + " '" + file + "' '" + dst + "'");
  std::vector<std::string> out;
  std::istringstream lines{slurp(dst)};
  std::string line;
  while (std::getline(lines, line))
    out.push_back(unhex(line));
  return out;
}

} // namespace quern::test::python_records
