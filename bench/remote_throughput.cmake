add_executable(quern_bench_remote_throughput ${CMAKE_CURRENT_LIST_DIR}/remote_throughput.cpp)
target_link_libraries(quern_bench_remote_throughput PRIVATE quern::net quern_command_line
                                                      quern_warnings)
set_target_properties(quern_bench_remote_throughput PROPERTIES OUTPUT_NAME bench_remote_throughput
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)

# A short run (label distributed: it starts processes on 127.0.0.1) that must
# end with the exactly-once line; it asserts no timing.
if(QUERN_BUILD_TESTS AND BUILD_TESTING)
  add_test(NAME bench_remote_throughput.smoke
    COMMAND quern_bench_remote_throughput --batches 20 --singles 500 --rounds 1 --timeout 120)
  set_tests_properties(bench_remote_throughput.smoke PROPERTIES LABELS distributed TIMEOUT 180
    PASS_REGULAR_EXPRESSION "every row arrived exactly once, in order \\([0-9]+ runs checked\\)")
endif()
