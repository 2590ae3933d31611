# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""``openstack gpu image set/unset/show``."""

import logging

from osc_lib.cli import format_columns

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)


def _pairs():
    """(option, property, help of --x, help of --no-x) of each pair."""
    from gpuclient.rules import images

    return (
        ('q35', images.MACHINE_TYPE,
         _('Set hw_machine_type=q35 (PCI Express machine; kept if the image '
           'already names a q35 machine such as pc-q35-8.2)'),
         _('Remove a q35 machine type (other machine types are kept); the '
           'host\'s default machine type then applies')),
        ('uefi', images.FIRMWARE_TYPE,
         _('Set hw_firmware_type=uefi (needed to map the large PCI BARs of '
           'datacenter GPUs)'),
         _('Set hw_firmware_type=bios')),
        ('secure-boot', images.SECURE_BOOT,
         _('Set os_secure_boot=required; needs q35 and UEFI (given in the '
           'same command or already set)'),
         _('Set os_secure_boot=disabled')),
        ('hide-hypervisor-id', images.HIDE_ID,
         _('Set img_hide_hypervisor_id=true: hide the hypervisor from the '
           'guest, for guest drivers that refuse to run in a VM (also removes '
           'the misspelt hw_hide_hypervisor_id)'),
         _('Set img_hide_hypervisor_id=false (also removes the misspelt '
           'hw_hide_hypervisor_id)')),
    )


def _add_image_arg(parser, help_text):
    parser.add_argument('image', metavar='<image>', help=help_text)


class SetImage(common.Command):
    _description = _(
        'Set the image properties GPU guests need.\n\n'
        'Only the options given change the image: --q35 and --uefi for '
        'GPUs with large PCI BARs, --secure-boot, --hide-hypervisor-id. '
        'Each has a --no- form that writes the explicit "off" value '
        '(hw_firmware_type=bios, os_secure_boot=disabled, '
        'img_hide_hypervisor_id=false); --no-q35 removes a q35 machine '
        'type, as no machine type fits every architecture. All or '
        'nothing; a combination Nova would refuse to boot is refused.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_image_arg(parser, _('Image to modify (name or ID)'))
        for option, _key, on_help, off_help in _pairs():
            dest = option.replace('-', '_')
            group = parser.add_mutually_exclusive_group()
            group.add_argument('--' + option, dest=dest,
                               action='store_true', default=None,
                               help=on_help)
            group.add_argument('--no-' + option, dest=dest,
                               action='store_false', help=off_help)
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import flavor_ops
        from gpuclient.rules import images

        client = self.app.client_manager.gpu
        options = {option: getattr(parsed_args, option)
                   for option, _key in images.OPTIONS}
        if all(value is None for value in options.values()):
            LOG.warning(_('No property given: nothing to change. Give '
                          '--q35, --uefi, --secure-boot or '
                          '--hide-hypervisor-id (or a --no- form).'))
            return
        plan = flavor_ops.set_image(
            client, parsed_args.image, dry_run=parsed_args.dry_run,
            **options)
        if parsed_args.dry_run:
            common.write_plan(self.app, plan)
        elif not plan:
            LOG.info(_('Image %s already has these properties: nothing to '
                       'do.'), parsed_args.image)


class UnsetImage(common.Command):
    _description = _(
        'Unset the image properties gpu image set added.\n\n'
        'A property is removed only when it holds a value gpu image set '
        'writes: the --x value (hw_machine_type=q35, hw_firmware_type=uefi, '
        'os_secure_boot=required, img_hide_hypervisor_id=true) or the '
        '--no-x value (hw_firmware_type=bios, os_secure_boot=disabled, '
        'img_hide_hypervisor_id=false). Another value is left, with a '
        'warning that says how to remove it. No option changes nothing.')

    def get_parser(self, prog_name):
        from gpuclient.rules import images

        parser = super().get_parser(prog_name)
        _add_image_arg(parser, _('Image to modify (name or ID)'))
        for option, key, _on_help, _off_help in _pairs():
            parser.add_argument(
                '--' + option, dest=option.replace('-', '_'),
                action='store_true', default=False,
                help=_('Remove %(key)s if it is %(value)s') % {
                    'key': key,
                    'value': ' or '.join(images.own_values(key))})
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import flavor_ops
        from gpuclient.rules import images

        client = self.app.client_manager.gpu
        options = {option: getattr(parsed_args, option)
                   for option, _key in images.OPTIONS}
        if not any(options.values()):
            LOG.warning(_('No property given: nothing to remove. Give '
                          '--q35, --uefi, --secure-boot or '
                          '--hide-hypervisor-id.'))
            return
        plan = flavor_ops.unset_image(
            client, parsed_args.image, dry_run=parsed_args.dry_run,
            **options)
        for warning in plan.warnings:
            LOG.warning(warning)
        if parsed_args.dry_run:
            common.write_plan(self.app, plan)


class ShowImage(common.ShowOne):
    _description = _(
        'Show the GPU-relevant properties of an image.\n\n'
        'Machine type, firmware, secure boot and hidden hypervisor id, '
        'whether the image is ready for GPU guests, and what is missing or '
        'contradictory.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('image', metavar='<image>',
                            help=_('Image to display (name or ID)'))
        return parser

    def take_action(self, parsed_args):
        from gpuclient.rules import images

        glance = self.app.client_manager.gpu.image
        image = glance.find_image(parsed_args.image)
        properties, ready, warnings = images.report(image)
        columns = ('id', 'name') + images.PROPERTIES + (
            images.WRONG_HIDE_ID, 'gpu_ready', 'warnings')
        values = (image.get('id'), image.get('name')) + tuple(
            properties[key] for key in images.PROPERTIES) + (
            image.get(images.WRONG_HIDE_ID), ready,
            format_columns.ListColumn(warnings))
        return columns, values
