# One queue shared by processes over CAF's middleman (docs/distributed.md):
# examples/distributed --role=all starts a host, 2 producers and 2 consumers.
quern_add_example(distributed
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/distributed/distributed_queue.cpp
  LIBS quern::net quern_command_line)

# The flagship pipeline over processes: a queue host (this process), a
# trainer and reader processes (docs/distributed.md, "The flagship over
# processes").
quern_add_example(csv_pipeline_distributed
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/distributed/csv_pipeline_distributed.cpp
          ${CMAKE_CURRENT_LIST_DIR}/distributed/hand_over.cpp
  LIBS quern::net quern::input quern::logging quern_command_line)
