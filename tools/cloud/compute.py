"""nova-compute with the test cloud's fake GPU drivers.

Run as ``python -m cloud.compute --config-file ...`` with tools/ on
PYTHONPATH and ``compute_driver = gpufake.<Class>``.  Nova 34 loads the
driver with ``importutils.import_object('nova.virt.%s' % compute_driver)``
and no fallback to a plain dotted path, so ``cloud.fakevirt`` is registered
as ``nova.virt.gpufake`` before nova-compute's main() runs.
"""

import sys

# nova.cmd.compute first: it applies nova's monkey-patching decision before
# anything else imports nova.
from nova.cmd import compute  # noqa: I001
import nova.virt

from cloud import fakevirt

sys.modules['nova.virt.gpufake'] = fakevirt
nova.virt.gpufake = fakevirt

if __name__ == '__main__':
    sys.argv[0] = 'nova-compute'
    sys.exit(compute.main())
