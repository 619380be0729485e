# The fuzz targets (docs/fuzzing.md). One source per target, fuzz_<name>.cpp,
# each defining LLVMFuzzerTestOneInput; its seed corpus is corpus/fuzz_<name>/
# (checked in, small).
# - In the libFuzzer build (QUERN_FUZZ=ON, clang only) each target is a
#   libFuzzer program; CTest runs it for QUERN_FUZZ_TEST_SECONDS over a
#   temporary copy of its corpus, so a run never writes into the checked-in
#   one; `make fuzz` runs them longer.
# - In every other build (included from tests/CMakeLists.txt) each target is
#   linked with replay_main.cpp and CTest replays its corpus once
#   (fuzz.replay.<name>): the plain build of make check and the sanitizer
#   build of make test check every input with no clang build of their own.
set(QUERN_FUZZ_TEST_SECONDS 5 CACHE STRING
    "Seconds each fuzz target runs as a CTest in the libFuzzer build")

set(quern_fuzz_targets
  record_reader        # TFRecord framing: read_records, record_reader, read_event_file,
                       # input's GZIP and ZLIB TFRecord files
  event_parser         # decode_event / encode_event round trips
  decode_csv           # decode_csv: records, defaults, delimiters, select_cols
  queue_messages       # a queue actor against a model, operation by operation
  message_deserialize) # CAF's deserialisation of every quern message type

set(quern_fuzz_dir ${CMAKE_CURRENT_LIST_DIR})
# Its own translation unit: beside a target that defines LLVMFuzzerInitialize
# in a unity batch, its weak declaration would be that definition.
set_source_files_properties(${quern_fuzz_dir}/replay_main.cpp
                            PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
foreach(name IN LISTS quern_fuzz_targets)
  # Target quern_fuzz_<name>, binary fuzz_<name> (make fuzz, make_seeds.sh).
  if(QUERN_FUZZ)
    add_executable(quern_fuzz_${name} ${quern_fuzz_dir}/fuzz_${name}.cpp)
    target_link_options(quern_fuzz_${name} PRIVATE -fsanitize=fuzzer)
    add_test(NAME fuzz.${name}
      COMMAND bash ${quern_fuzz_dir}/run_fuzzer.sh $<TARGET_FILE:quern_fuzz_${name}>
              ${quern_fuzz_dir}/corpus/fuzz_${name} ${QUERN_FUZZ_TEST_SECONDS}
              ${CMAKE_CURRENT_BINARY_DIR}/artifacts)
    set_tests_properties(fuzz.${name} PROPERTIES TIMEOUT 300)
  else()
    add_executable(quern_fuzz_${name} ${quern_fuzz_dir}/fuzz_${name}.cpp
                                      ${quern_fuzz_dir}/replay_main.cpp)
    add_test(NAME fuzz.replay.${name}
             COMMAND quern_fuzz_${name} ${quern_fuzz_dir}/corpus/fuzz_${name})
    set_tests_properties(fuzz.replay.${name} PROPERTIES TIMEOUT 300 LABELS fuzz
      PASS_REGULAR_EXPRESSION "replayed [1-9][0-9]* inputs")
  endif()
  set_target_properties(quern_fuzz_${name} PROPERTIES OUTPUT_NAME fuzz_${name})
  target_link_libraries(quern_fuzz_${name} PRIVATE quern::input quern_warnings)
endforeach()

# libprotobuf logs every payload it refuses (invalid UTF-8) to stderr; the
# targets that parse events silence that through libprotobuf's log handler.
target_link_libraries(quern_fuzz_event_parser PRIVATE protobuf::libprotobuf)
target_link_libraries(quern_fuzz_record_reader PRIVATE protobuf::libprotobuf)
# It compresses its inputs to read them as ZLIB files too.
target_link_libraries(quern_fuzz_record_reader PRIVATE ZLIB::ZLIB)
