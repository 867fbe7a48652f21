# A package so that `python3 -m unittest discover -s bench` (scripts/test.sh)
# finds test_report.py: discovery enters only folders that are packages.
