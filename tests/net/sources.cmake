# quern across processes (docs/distributed.md): a helper program that plays
# host, producer, consumer, closer or summary-writer feeder, and a suite that
# starts it as real processes on 127.0.0.1. Label `distributed` (ctest -L distributed).
add_executable(quern_test_distributed_node ${CMAKE_CURRENT_LIST_DIR}/node.cpp)
# CAF::openssl: the anonymous TLS client of the TLS tests uses CAF directly.
target_link_libraries(quern_test_distributed_node PRIVATE quern::net quern::logging quern::input CAF::openssl
                      quern_warnings)

# quern-node's tests join the suite when the tools are built.
set(quern_distributed_sources ${CMAKE_CURRENT_LIST_DIR}/distributed_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tls_test.cpp ${CMAKE_CURRENT_LIST_DIR}/remote_writer_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/producer_test.cpp ${CMAKE_CURRENT_LIST_DIR}/door_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/checkpoint_test.cpp)
# quern::input: direct_batch_op streaming into a queue of another process.
set(quern_distributed_libs quern::net quern::logging quern::input)
if(TARGET quern-node)
  list(APPEND quern_distributed_sources ${CMAKE_CURRENT_LIST_DIR}/quern_node_test.cpp)
  list(APPEND quern_distributed_libs quern_node_flags)
endif()
# So do the flagship's kill tests when the examples are built.
if(TARGET quern_example_csv_pipeline_distributed)
  list(APPEND quern_distributed_sources ${CMAKE_CURRENT_LIST_DIR}/flagship_test.cpp)
endif()
quern_add_test_suite(quern_test_distributed
  SOURCES ${quern_distributed_sources}
  LIBS ${quern_distributed_libs})
target_compile_definitions(quern_test_distributed PRIVATE
  QUERN_TEST_NODE_BINARY="$<TARGET_FILE:quern_test_distributed_node>")
add_dependencies(quern_test_distributed quern_test_distributed_node)
if(TARGET quern-node)
  target_compile_definitions(quern_test_distributed PRIVATE
    QUERN_NODE_BINARY="$<TARGET_FILE:quern-node>")
  add_dependencies(quern_test_distributed quern-node)
endif()
if(TARGET quern_example_csv_pipeline_distributed)
  target_compile_definitions(quern_test_distributed PRIVATE
    QUERN_FLAGSHIP_BINARY="$<TARGET_FILE:quern_example_csv_pipeline_distributed>")
  add_dependencies(quern_test_distributed quern_example_csv_pipeline_distributed)
endif()

# catch_discover_tests lists the suite's tests in quern_test_distributed_TESTS
# when CTest reads its include file; this one, read after it, labels them.
# Their environment: tests/ubsan.supp as every suite, and an LSan
# suppression of one CAF 0.17.6 cycle at exit (tests/net/lsan.supp);
# the processes they start inherit it.
set(quern_distributed_env
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=${PROJECT_SOURCE_DIR}/tests/ubsan.supp"
  "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/lsan.supp")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/quern_test_distributed_labels.cmake
  "if(DEFINED quern_test_distributed_TESTS)\n"
  "  set_tests_properties(\${quern_test_distributed_TESTS} PROPERTIES LABELS distributed TIMEOUT 600\n"
  "    ENVIRONMENT \"${quern_distributed_env}\")\n"
  "endif()\n")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
  ${CMAKE_CURRENT_BINARY_DIR}/quern_test_distributed_labels.cmake)

# The example of docs/distributed.md: host here, 2 producer and 2 consumer
# processes; it exits non-zero unless every row arrived exactly once.
if(TARGET quern_example_distributed)
  add_test(NAME distributed.example COMMAND quern_example_distributed --role=all --rows=3000)
  set_tests_properties(distributed.example PROPERTIES LABELS distributed TIMEOUT 300
    ENVIRONMENT "${quern_distributed_env}")
endif()

# The flagship over processes (examples/distributed/csv_pipeline_distributed.cpp):
# a host, a trainer and 2 reader processes; it exits non-zero unless every
# process ended well and the trainer trained on every example of a full batch.
if(TARGET quern_example_csv_pipeline_distributed)
  add_test(NAME distributed.flagship
    COMMAND quern_example_csv_pipeline_distributed --files=2 --rows=500 --epochs=3
            --logdir=${CMAKE_CURRENT_BINARY_DIR}/flagship_run)
  set_tests_properties(distributed.flagship PROPERTIES LABELS distributed TIMEOUT 300
    ENVIRONMENT "${quern_distributed_env}")
endif()
