from mimikit.cli import main

raise SystemExit(main())
