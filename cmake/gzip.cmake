# SPDX-License-Identifier: Apache-2.0
# cmake -DINPUT=FILE -DOUTPUT=FILE.gz -P gzip.cmake: gzip -9n, as Debian policy asks of manual
# pages and documentation (-n: no name or time stamp inside, so the bytes are reproducible).
execute_process(COMMAND gzip -9nc ${INPUT} OUTPUT_FILE ${OUTPUT} COMMAND_ERROR_IS_FATAL ANY)
