quern_add_test_suite(quern_test_logging
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/record_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/event_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/writer_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/crash_consistency_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/hparams_test.cpp
  LIBS quern::logging)
# hparams_test.cpp decodes what the writer wrote with the generated protos of
# logging/proto (private to logging/, so reached here through the build tree).
target_include_directories(quern_test_logging PRIVATE ${PROJECT_BINARY_DIR}/logging)
target_link_libraries(quern_test_logging PRIVATE protobuf::libprotobuf)
target_compile_definitions(quern_test_logging PRIVATE
  QUERN_LOGGING_GOLDEN_DIR="${CMAKE_CURRENT_LIST_DIR}/golden")
if(QUERN_SANITIZE)
  # Blocking receives instantiate CAF 0.17 header code that UBSan's vptr
  # check flags (see logging/CMakeLists.txt); all other checks stay on.
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/writer_test.cpp
    PROPERTIES COMPILE_OPTIONS -fno-sanitize=vptr)
endif()

# A child process for the crash tests (writer_test.cpp, crash_consistency_test.cpp).
add_executable(quern_test_crash_writer ${CMAKE_CURRENT_LIST_DIR}/crash_writer.cpp)
target_link_libraries(quern_test_crash_writer PRIVATE quern::logging quern_warnings)
add_dependencies(quern_test_logging quern_test_crash_writer)
target_compile_definitions(quern_test_logging PRIVATE
  QUERN_CRASH_WRITER_PATH="$<TARGET_FILE:quern_test_crash_writer>")
