#!/usr/bin/env python3
import sys; print("PASS: fleet/check_deploy_stub")
