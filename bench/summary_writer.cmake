# bench_summary_writer: 1,000,000 scalar events through the summary-writer
# actor and, in the same process, through a plain buffered-file encoder.
add_executable(quern_bench_summary_writer ${CMAKE_CURRENT_LIST_DIR}/summary_writer.cpp)
target_link_libraries(quern_bench_summary_writer PRIVATE quern::logging quern_command_line quern_warnings)
set_target_properties(quern_bench_summary_writer PROPERTIES OUTPUT_NAME bench_summary_writer
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
