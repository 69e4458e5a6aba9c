# torchsync-fixture: steps=6
"""Never finishes."""
import time

while True:
    time.sleep(0.05)
