#!/usr/bin/env bun
