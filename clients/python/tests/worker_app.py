"""The app a worker subprocess runs in test_shutdown
(``python3 -m silt worker tests.worker_app:app``).

Its function leaves marker files, so the test sees from outside when it
started and whether it got to its end.
"""

import os
import time

from silt import App

app = App(os.environ["SILT_URL"])


@app.task(queue=os.environ.get("SILT_TEST_QUEUE", "shutdown"))
def sleepy(seconds, marker):
    open(marker + ".started", "w").close()
    time.sleep(seconds)   # deliberately deaf to the cancel flag: only the grace bounds it
    open(marker + ".done", "w").close()
    return {"slept": seconds}
