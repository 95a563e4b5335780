"""The Migration controller: admission, target, phases and steps, hand-over, cost, verification."""
