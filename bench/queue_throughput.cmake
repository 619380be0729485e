add_executable(quern_bench_queue_throughput ${CMAKE_CURRENT_LIST_DIR}/queue_throughput.cpp)
target_link_libraries(quern_bench_queue_throughput PRIVATE quern::queues quern_command_line
                                                     quern_warnings)
set_target_properties(quern_bench_queue_throughput PROPERTIES OUTPUT_NAME bench_queue_throughput
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)

# The --scale sweep once (16M rows the longest run): every row of every run
# must arrive once (a run that loses one throws); it asserts no timing.
if(QUERN_BUILD_TESTS AND BUILD_TESTING)
  add_test(NAME bench_queue_throughput.scale COMMAND quern_bench_queue_throughput --scale -r 1)
  set_tests_properties(bench_queue_throughput.scale PROPERTIES TIMEOUT 300
    PASS_REGULAR_EXPRESSION "16M rows, P=1 C=1 .*4M rows, P=16 C=1 .*peak RSS")
endif()
