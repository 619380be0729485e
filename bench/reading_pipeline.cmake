# bench_reading_pipeline: the flagship's input pipeline without the model
# (CSV -> readers -> decode_csv -> shuffle_batch) beside a plain
# single-threaded read-and-parse loop.
add_executable(quern_bench_reading_pipeline ${CMAKE_CURRENT_LIST_DIR}/reading_pipeline.cpp)
target_link_libraries(quern_bench_reading_pipeline PRIVATE quern::input quern_command_line
                                                     quern_warnings)
set_target_properties(quern_bench_reading_pipeline PROPERTIES OUTPUT_NAME bench_reading_pipeline
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
