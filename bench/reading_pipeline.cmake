# bench_reading_pipeline: the flagship's input pipeline without the model
# (CSV -> readers -> decode_csv -> shuffle_batch) beside a plain
# single-threaded read-and-parse loop.
add_executable(quern_bench_reading_pipeline ${CMAKE_CURRENT_LIST_DIR}/reading_pipeline.cpp)
target_link_libraries(quern_bench_reading_pipeline PRIVATE quern::input quern_command_line
                                                     quern_warnings)
set_target_properties(quern_bench_reading_pipeline PROPERTIES OUTPUT_NAME bench_reading_pipeline
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
if(QUERN_BUILD_TESTS AND BUILD_TESTING)
  # The checkpoint runs, short, with the files alone: each run must deliver
  # every row once (a run that does not names its count). No timing asserted.
  add_test(NAME bench_reading_pipeline.files_alone COMMAND quern_bench_reading_pipeline
    --mb 1 --rounds 1 --checkpoint-every 50 --alone files)
  set_tests_properties(bench_reading_pipeline.files_alone PROPERTIES
    PASS_REGULAR_EXPRESSION "files, the file of one snapshot written again every 50 batches"
    FAIL_REGULAR_EXPRESSION "rows came out|[0-9]+ of [0-9]+ rows")
  add_test(NAME bench_reading_pipeline.bad_alone COMMAND quern_bench_reading_pipeline
    --alone nope)
  set_tests_properties(bench_reading_pipeline.bad_alone PROPERTIES
    PASS_REGULAR_EXPRESSION "--alone must be snapshots or files, not 'nope'")
endif()
