# The input guide's pipeline: the flagship (make demo).
quern_add_example(csv_pipeline
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/reading/csv_pipeline.cpp
  LIBS quern::input quern_command_line)
